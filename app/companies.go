package app

// The Companies screen's service (spec 3, 3.2, 4.6, 5.5, 9.1) and the Company logo fetcher.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

// Companies is the window's service for the Companies screen, over the Host's engine (discovery
// and its store), sign-in layer (accounts, sign-out) and [Host.ForgetCompany]. Bound to the
// window: Discover, SignOut and Forget are user gestures there.
type Companies struct{ h *Host }

// CompanyEntry is one Company on the Companies screen.
type CompanyEntry struct {
	Company CompanyCard `json:"company"`
	// Accounts are the signed-in accounts, with their scopes (no token).
	Accounts []oauth.AccountStatus `json:"accounts"`
	// Problem says why the entry is incomplete (e.g. the keyring could not be read).
	Problem string `json:"problem,omitempty"`
	// ExcludedTasks are the tasks the Company chose not to offer through the protocol, with the
	// other way it gives, in plain words (spec 9.1, 9.2): the Company's text, shown as text.
	ExcludedTasks []ExcludedTaskEntry `json:"excludedTasks"`
	// ExcludedTasksProblem says why they could not be read ("" when they could, or when the
	// Company lists none).
	ExcludedTasksProblem string `json:"excludedTasksProblem,omitempty"`
	// ScopeWords are the Company's descriptions of the scopes the accounts hold, by scope (spec
	// 4.7; the Company's words, shown beside the scope's name). A scope without one is absent.
	ScopeWords map[string]string `json:"scopeWords"`
	// Demo is true for the demo's reference Company, whose account the demo signed in.
	Demo bool `json:"demo"`
}

// ExcludedTaskEntry is one task a Company chose not to offer, for the Companies screen.
type ExcludedTaskEntry struct {
	Task string `json:"task"`
	// Alternative is the other way the Company gives, in plain words ("" when none).
	Alternative string `json:"alternative"`
}

// excludedTaskEntries turns the excluded tasks into the screen's words: the Company's
// instructions, the pages it points to, and how many API operations or tools it points the agent
// to (the model's tools check those against the Company's descriptions).
func excludedTaskEntries(x *coverage.ExcludedTasks) []ExcludedTaskEntry {
	out := []ExcludedTaskEntry{}
	for _, t := range x.Tasks {
		e := ExcludedTaskEntry{Task: t.Task}
		if a := t.Alternative; a != nil {
			var parts []string
			if a.Instructions != "" {
				parts = append(parts, a.Instructions)
			}
			agent := 0
			for _, r := range a.References {
				if r.Type == coverage.RefWeb {
					parts = append(parts, "On the web: "+r.URL)
				} else {
					agent++
				}
			}
			if agent == 1 {
				parts = append(parts, "The Company also points your agent to one of its API operations or tools.")
			} else if agent > 1 {
				parts = append(parts, fmt.Sprintf("The Company also points your agent to %d of its API operations or tools.", agent))
			}
			e.Alternative = strings.Join(parts, " ")
		}
		out = append(out, e)
	}
	return out
}

// CompanyList is a page of the Companies screen, in name order; Next continues it ("" on the
// last page) and Total counts every discovered Company.
type CompanyList struct {
	Companies []CompanyEntry `json:"companies"`
	Next      string         `json:"next"`
	Total     int            `json:"total"`
}

// CompaniesPageMax is the most Companies one page of List holds.
const CompaniesPageMax = 100

func (c *Companies) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(windowCause(c.h.Context()), d)
}

// entry is co's entry on the Companies screen; with readAccounts false (the keyring holds no
// account of it) its accounts are not asked for. With fetch false (the list of every Company)
// the excluded tasks come from the cache only, and a Company whose copy is missing or stale is
// read again in the background ([Host.refreshExcludedTasks]), so the list never waits on one
// Company's server; with fetch true (a Company just discovered) they are fetched now.
func (c *Companies) entry(ctx context.Context, co *discovery.Company, readAccounts, fetch bool) CompanyEntry {
	e := CompanyEntry{Company: cardOf(co), Accounts: []oauth.AccountStatus{}, ExcludedTasks: []ExcludedTaskEntry{}, ScopeWords: map[string]string{}}
	if d, ok := c.h.Demo(); ok && d.Identifier == co.Identifier {
		e.Demo = true
	}
	if c.h.coverage != nil && co.Channels.ExcludedTasks != nil {
		var opts []discovery.Option
		if !fetch {
			opts = append(opts, discovery.CacheOnly())
		}
		xctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		x, err := c.h.coverage.ExcludedTasks(xctx, co, opts...)
		cancel()
		if errors.Is(err, discovery.ErrNotCached) {
			// A document the cache may not keep (no-store) or a read that failed: the last
			// background read's result, for a while, so the list does not ask again at once.
			if last, ok := c.h.lastExcludedTasks(co.Identifier); ok {
				x, err = last.x, last.err
			}
		}
		switch {
		case errors.Is(err, discovery.ErrNotCached):
			e.ExcludedTasksProblem = "Poppydesk is reading the tasks this Company does not offer."
			c.h.refreshExcludedTasks(co)
		case err != nil:
			e.ExcludedTasksProblem = "Poppydesk could not read the tasks this Company does not offer: " + err.Error()
		default:
			e.ExcludedTasks = excludedTaskEntries(x)
			if x.Stale {
				c.h.refreshExcludedTasks(co)
			}
		}
	}
	if co.Issuer == "" || !readAccounts {
		return e
	}
	accts, err := c.h.oauth.Accounts(ctx, co.Identifier)
	if err != nil {
		e.Problem = "Poppydesk could not read the accounts from the system keyring: " + err.Error()
	} else if accts != nil {
		e.Accounts = accts
	}
	var names []string
	for _, a := range e.Accounts {
		names = append(names, a.Scopes...)
	}
	for _, s := range oauth.Describe(co, names, nil) {
		if s.Description != "" {
			e.ScopeWords[s.Name] = visible(s.Description)
		}
	}
	return e
}

// List returns a page of the discovered Companies with their signed-in accounts, in name order
// (without case, then identifier), from cursor ("" for the first page; Next of the previous
// one), at most limit of them (1 to CompaniesPageMax). A page is one range scan of an index of
// the state database, one listing of the keyring, and each listed Company's stored document.
func (c *Companies) List(cursor string, limit int) (CompanyList, error) {
	if err := c.h.refusal(); err != nil {
		return CompanyList{}, err
	}
	ctx, cancel := c.ctx(30 * time.Second)
	defer cancel()
	if limit <= 0 || limit > CompaniesPageMax {
		limit = CompaniesPageMax
	}
	q := vault.CompanyQuery{Limit: limit + 1}
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		name, id, ok := strings.Cut(string(raw), "\x00")
		if err != nil || !ok || id == "" {
			return CompanyList{}, fmt.Errorf("%q is not a cursor of the Companies list; list again from the start", cursor)
		}
		q.AfterName, q.AfterID = name, id
	}
	refs, err := c.h.state.ListCompanyRefs(ctx, q)
	if err != nil {
		return CompanyList{}, fmt.Errorf("reading the known Companies failed: %w", err)
	}
	out := CompanyList{Companies: []CompanyEntry{}}
	if len(refs) > limit {
		last := refs[limit-1]
		out.Next = base64.RawURLEncoding.EncodeToString([]byte(last.Name + "\x00" + last.Identifier))
		refs = refs[:limit]
	}
	if out.Total, err = c.h.state.CountCompanies(ctx); err != nil {
		return CompanyList{}, fmt.Errorf("reading the known Companies failed: %w", err)
	}
	// One listing of the keyring says which Companies have a signed-in account; only those are
	// asked for their accounts (each asks the keyring again), so a page costs one listing.
	pairs, perr := c.h.secrets.Companies(ctx)
	withAccount := map[string]bool{}
	for _, p := range pairs {
		if p[1] != "" {
			withAccount[p[0]] = true
		}
	}
	for _, r := range refs {
		co, err := c.h.engine.Company(ctx, r.Identifier)
		if err != nil {
			c.h.log.Warn("a stored Company could not be read", "company", r.Identifier, "error", err.Error())
			out.Companies = append(out.Companies, CompanyEntry{Company: CompanyCard{Identifier: r.Identifier, Name: r.Identifier},
				Accounts: []oauth.AccountStatus{}, ExcludedTasks: []ExcludedTaskEntry{}, ScopeWords: map[string]string{},
				Problem: "Poppydesk could not read what it stored about this Company; discover its domain again. (" + err.Error() + ")"})
			continue
		}
		out.Companies = append(out.Companies, c.entry(ctx, co, perr != nil || withAccount[r.Identifier], false))
	}
	return out, nil
}

// Discover finds and verifies the Company at domain ("example.com"; host:port in the demo) as
// the User asked in the window (spec 3). Errors name the check that failed and its section.
func (c *Companies) Discover(domain string) (CompanyEntry, error) {
	if err := c.h.refusal(); err != nil {
		return CompanyEntry{}, err
	}
	domain = strings.TrimSpace(domain)
	domain = strings.TrimPrefix(domain, "https://")
	domain = strings.TrimSuffix(domain, "/")
	if domain == "" || strings.ContainsAny(domain, "/ ?#@") {
		return CompanyEntry{}, errors.New("type a domain such as example.com (no path): Poppydesk reads https://{domain}/.well-known/poppy.json")
	}
	ctx, cancel := c.ctx(60 * time.Second)
	defer cancel()
	co, err := c.h.engine.Discover(ctx, domain)
	if err != nil {
		if ce, ok := discovery.AsCheckError(err); ok && c.h.findings != nil {
			f := inspect.FromCheckError(ce)
			f.Company = domain
			c.h.findings.Add(f)
		}
		if hint := discovery.DeveloperHint(err, domain); hint != "" {
			hint = strings.NewReplacer("add it with --dev-company "+domain, "add "+domain+" in Settings → Developer mode",
				"give its certificate with --dev-ca FILE and the Company with --dev-company "+domain, "add "+domain+" and its CA file in Settings → Developer mode").Replace(hint)
			return CompanyEntry{}, fmt.Errorf("Poppydesk could not verify %s as a Company: %w. %s", domain, err, hint)
		}
		return CompanyEntry{}, fmt.Errorf("Poppydesk could not verify %s as a Company: %w", domain, err)
	}
	c.h.relay.Emit(EventCompaniesChanged)
	return c.entry(ctx, co, true, true), nil
}

// SignOut revokes every refresh token held for the account at the Company and deletes its
// tokens (spec 4.6, 5.5).
func (c *Companies) SignOut(company, account string) error {
	if err := c.h.refusal(); err != nil {
		return err
	}
	ctx, cancel := c.ctx(60 * time.Second)
	defer cancel()
	co, err := c.h.engine.Company(ctx, company)
	if err != nil {
		return fmt.Errorf("Poppydesk does not know this Company: %w", err)
	}
	if err := c.h.oauth.SignOut(ctx, co, account); err != nil {
		return fmt.Errorf("signing out of %s (%s) failed: %w", co.Organization.Name, account, err)
	}
	c.h.log.Info("signed out from the window", "company", co.Identifier, "account", account)
	c.h.relay.Emit(EventCompaniesChanged)
	return nil
}

// Forget signs every account out of the Company and deletes what Poppydesk keeps about it
// ([Host.ForgetCompany]).
func (c *Companies) Forget(company string) error {
	if err := c.h.refusal(); err != nil {
		return err
	}
	ctx, cancel := c.ctx(60 * time.Second)
	defer cancel()
	if err := c.h.ForgetCompany(ctx, company); err != nil {
		return err
	}
	c.h.relay.Emit(EventCompaniesChanged)
	return nil
}

// LogoFetcher turns a Company's logo_uri into a data: URL the window may show. The window's
// Content-Security-Policy forbids remote loads (docs/DESIGN.md invariant 4), so Poppydesk fetches the
// logo itself through the engine's safe transport (HTTPS only, address policy, no redirects:
// spec 3) and passes the bytes. Only raster images are accepted (PNG, JPEG, GIF, WebP, checked
// by both Content-Type and content sniffing), up to MaxLogoBytes; SVG is refused because it is
// a document that can reference other resources. Anything else leaves the placeholder.
// Results (and failures) are cached per URL for the run.
type LogoFetcher struct {
	client *http.Client
	mu     sync.Mutex
	cache  map[string]logoResult
}

type logoResult struct {
	url string
	err error
}

// MaxLogoBytes bounds a logo.
const MaxLogoBytes = 256 << 10

// NewLogoFetcher returns a LogoFetcher over client (transport.Transport's NoRedirectClient).
func NewLogoFetcher(client *http.Client) *LogoFetcher {
	return &LogoFetcher{client: client, cache: map[string]logoResult{}}
}

var logoTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Fetch returns the logo at logoURI as a data: URL.
func (l *LogoFetcher) Fetch(ctx context.Context, logoURI string) (string, error) {
	l.mu.Lock()
	r, ok := l.cache[logoURI]
	l.mu.Unlock()
	if ok {
		return r.url, r.err
	}
	u, err := l.fetch(ctx, logoURI)
	if ctx.Err() == nil {
		l.mu.Lock()
		l.cache[logoURI] = logoResult{u, err}
		l.mu.Unlock()
	}
	return u, err
}

func (l *LogoFetcher) fetch(ctx context.Context, logoURI string) (string, error) {
	u, err := transport.CheckURL(logoURI)
	if err != nil {
		return "", fmt.Errorf("logo_uri is not an HTTPS URL (spec 3.1): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", strings.Join(logoTypes, ", "))
	resp, err := l.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetching the logo failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the logo answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxLogoBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the logo failed: %w", err)
	}
	if len(body) > MaxLogoBytes {
		return "", fmt.Errorf("the logo is larger than %d bytes", MaxLogoBytes)
	}
	declared, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sniffed := http.DetectContentType(body)
	if !slices.Contains(logoTypes, declared) || sniffed != declared {
		return "", fmt.Errorf("the logo is not a PNG, JPEG, GIF or WebP image (declared %q, content looks like %q)", declared, sniffed)
	}
	var b bytes.Buffer
	b.WriteString("data:" + declared + ";base64,")
	b.WriteString(base64.StdEncoding.EncodeToString(body))
	return b.String(), nil
}

// refreshExcludedTasks reads co's excluded tasks again in the background (spec 9.1, through the
// RFC 9111 cache, which then holds the fresh copy) and tells the window the Companies changed.
// One read per Company at a time; the reads run one after another, so a list of 200 Companies
// opens at most one connection at a time for them.
func (h *Host) refreshExcludedTasks(co *discovery.Company) {
	h.excluded.mu.Lock()
	defer h.excluded.mu.Unlock()
	if h.excluded.queued == nil {
		h.excluded.queued = map[string]bool{}
	}
	if h.excluded.queued[co.Identifier] {
		return
	}
	h.excluded.queued[co.Identifier] = true
	h.excluded.queue = append(h.excluded.queue, co)
	if h.excluded.running {
		return
	}
	h.excluded.running = true
	if err := h.life.Go("reading Companies' excluded tasks", h.readExcludedTasks); err != nil {
		h.excluded.running = false
	}
}

func (h *Host) readExcludedTasks(ctx context.Context) {
	for {
		h.excluded.mu.Lock()
		if len(h.excluded.queue) == 0 || ctx.Err() != nil {
			h.excluded.queue, h.excluded.queued, h.excluded.running = nil, nil, false
			h.excluded.mu.Unlock()
			return
		}
		co := h.excluded.queue[0]
		h.excluded.queue = h.excluded.queue[1:]
		h.excluded.mu.Unlock()

		xctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		x, err := h.coverage.ExcludedTasks(xctx, co)
		cancel()
		h.excluded.mu.Lock()
		delete(h.excluded.queued, co.Identifier)
		if h.excluded.last == nil {
			h.excluded.last = map[string]excludedRead{}
		}
		h.excluded.last[co.Identifier] = excludedRead{x: x, err: err, at: h.now()}
		h.excluded.mu.Unlock()
		if err != nil {
			h.log.Info("a Company's excluded tasks could not be read", "company", co.Identifier, "error", err.Error())
		}
		h.relay.Emit(EventCompaniesChanged)
	}
}

// excludedTasksReads are the background reads of Companies' excluded tasks: the Companies
// waiting (queue, queued), whether a reader runs, and the last result per Company.
type excludedTasksReads struct {
	mu      sync.Mutex
	queue   []*discovery.Company
	queued  map[string]bool
	running bool
	last    map[string]excludedRead
}

// excludedRead is the result of a background read of a Company's excluded tasks.
type excludedRead struct {
	x   *coverage.ExcludedTasks
	err error
	at  time.Time
}

// excludedReadKept is how long the Companies screen shows a background read's result when the
// cache holds no copy (the Company forbids storing it, or the read failed) before reading again.
const excludedReadKept = 5 * time.Minute

// lastExcludedTasks returns the last background read of the Company's excluded tasks, if it is
// recent.
func (h *Host) lastExcludedTasks(company string) (excludedRead, bool) {
	h.excluded.mu.Lock()
	defer h.excluded.mu.Unlock()
	r, ok := h.excluded.last[company]
	if !ok || h.now().Sub(r.at) > excludedReadKept {
		return excludedRead{}, false
	}
	return r, true
}
