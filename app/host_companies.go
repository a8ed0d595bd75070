package app

// The Companies the Host knows (spec 3, 3.2, 4.6, 5.5, 9.1): discovering one as the user asked,
// a page of them with their signed-in accounts and the tasks they do not offer, signing an
// account out, forgetting a Company, and the background reads of their excluded tasks.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// EventCompaniesChanged says the Company list or an account changed; the window lists the
// Companies again.
const EventCompaniesChanged = "companies:changed"

// CompaniesPageMax is the most Companies one page of [Host.Companies] holds.
const CompaniesPageMax = 100

// Company is the discovered Company with this identifier, as stored (spec 3.2).
func (h *Host) Company(ctx context.Context, identifier string) (*discovery.Company, error) {
	if err := h.Refusal(); err != nil {
		return nil, err
	}
	co, err := h.engine.Company(ctx, identifier)
	if err != nil {
		return nil, &Error{Message: "Poppydesk does not know this Company", Err: err}
	}
	return co, nil
}

// CompanyState is what the Host knows of a discovered Company: its verified document, its
// signed-in accounts, and the tasks it chose not to offer through the protocol (spec 9.1).
type CompanyState struct {
	// Identifier names the Company (spec 3.2). Company is its verified document; nil when what
	// was stored cannot be read, and Err says why.
	Identifier string
	Company    *discovery.Company
	Err        error
	// Demo is set for the demo's reference Company, whose account the demo signed in.
	Demo bool
	// Accounts are the signed-in accounts, with their scopes (no token); AccountsErr says why
	// the keyring could not be read.
	Accounts    []oauth.AccountStatus
	AccountsErr error
	// Excluded are the tasks the Company does not offer (nil when it lists none). ExcludedErr
	// says why they could not be read: discovery.ErrNotCached while the Host reads them in the
	// background ([EventCompaniesChanged] follows).
	Excluded    *coverage.ExcludedTasks
	ExcludedErr error
}

// CompanyPage is a page of [Host.Companies]: Next continues it ("" on the last page) and Total
// counts every discovered Company.
type CompanyPage struct {
	Companies []CompanyState
	Next      string
	Total     int
}

// Companies returns a page of the discovered Companies in name order (without case, then
// identifier), from cursor ("" for the first page; Next of the previous one), at most limit of
// them (1 to CompaniesPageMax). A page is one range scan of an index of the state database, one
// listing of the keyring, and each listed Company's stored document; the excluded tasks come
// from the cache, and a Company whose copy is missing or stale is read again in the background,
// so the list never waits on one Company's server.
func (h *Host) Companies(ctx context.Context, cursor string, limit int) (CompanyPage, error) {
	if err := h.Refusal(); err != nil {
		return CompanyPage{}, err
	}
	if limit <= 0 || limit > CompaniesPageMax {
		limit = CompaniesPageMax
	}
	q := vault.CompanyQuery{Limit: limit + 1}
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		name, id, ok := strings.Cut(string(raw), "\x00")
		if err != nil || !ok || id == "" {
			return CompanyPage{}, fmt.Errorf("%q is not a cursor of the Companies list; list again from the start", cursor)
		}
		q.AfterName, q.AfterID = name, id
	}
	refs, err := h.state.ListCompanyRefs(ctx, q)
	if err != nil {
		return CompanyPage{}, fmt.Errorf("reading the known Companies failed: %w", err)
	}
	var out CompanyPage
	if len(refs) > limit {
		last := refs[limit-1]
		out.Next = base64.RawURLEncoding.EncodeToString([]byte(last.Name + "\x00" + last.Identifier))
		refs = refs[:limit]
	}
	if out.Total, err = h.state.CountCompanies(ctx); err != nil {
		return CompanyPage{}, fmt.Errorf("reading the known Companies failed: %w", err)
	}
	// One listing of the keyring says which Companies have a signed-in account; only those are
	// asked for their accounts (each asks the keyring again), so a page costs one listing.
	pairs, perr := h.secrets.Companies(ctx)
	withAccount := map[string]bool{}
	for _, p := range pairs {
		if p[1] != "" {
			withAccount[p[0]] = true
		}
	}
	for _, r := range refs {
		co, err := h.engine.Company(ctx, r.Identifier)
		if err != nil {
			h.log.Warn("a stored Company could not be read", "company", r.Identifier, "error", err.Error())
			out.Companies = append(out.Companies, CompanyState{Identifier: r.Identifier, Err: err})
			continue
		}
		out.Companies = append(out.Companies, h.companyState(ctx, co, perr != nil || withAccount[r.Identifier], false))
	}
	return out, nil
}

// companyState is what the Host knows of co; with readAccounts false (the keyring holds no
// account of it) its accounts are not asked for. With fetch false the excluded tasks come from
// the cache only, and a Company whose copy is missing or stale is read again in the background
// ([Host.refreshExcludedTasks]); with fetch true (a Company just discovered) they are fetched now.
func (h *Host) companyState(ctx context.Context, co *discovery.Company, readAccounts, fetch bool) CompanyState {
	st := CompanyState{Identifier: co.Identifier, Company: co}
	if d, ok := h.Demo(); ok && d.Identifier == co.Identifier {
		st.Demo = true
	}
	if h.coverage != nil && co.Channels.ExcludedTasks != nil {
		var opts []discovery.Option
		if !fetch {
			opts = append(opts, discovery.CacheOnly())
		}
		xctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st.Excluded, st.ExcludedErr = h.coverage.ExcludedTasks(xctx, co, opts...)
		cancel()
		if errors.Is(st.ExcludedErr, discovery.ErrNotCached) {
			// A document the cache may not keep (no-store) or a read that failed: the last
			// background read's result, for a while, so the list does not ask again at once.
			if last, ok := h.lastExcludedTasks(co.Identifier); ok {
				st.Excluded, st.ExcludedErr = last.x, last.err
			}
		}
		switch {
		case errors.Is(st.ExcludedErr, discovery.ErrNotCached):
			h.refreshExcludedTasks(co)
		case st.ExcludedErr == nil && st.Excluded.Stale:
			h.refreshExcludedTasks(co)
		}
	}
	if co.Issuer == "" || !readAccounts {
		return st
	}
	st.Accounts, st.AccountsErr = h.oauth.Accounts(ctx, co.Identifier)
	return st
}

// DiscoverCompany finds and verifies the Company at domain ("example.com"; host:port in the
// demo) as the user asked in the window (spec 3), fetching its documents anew rather than from
// the cache (engine.DiscoverAnew: a developer's change shows at once), and tells the window. A failed check is also
// a finding of the Inspector (agentcore/inspect); the error is discovery's, naming the check
// and its section.
func (h *Host) DiscoverCompany(ctx context.Context, domain string) (CompanyState, error) {
	if err := h.Refusal(); err != nil {
		return CompanyState{}, err
	}
	co, err := h.engine.DiscoverAnew(ctx, domain)
	if err != nil {
		if ce, ok := discovery.AsCheckError(err); ok && h.findings != nil {
			f := inspect.FromCheckError(ce)
			f.Company = domain
			h.findings.Add(f)
		}
		return CompanyState{}, err
	}
	h.relay.Emit(EventCompaniesChanged)
	return h.companyState(ctx, co, true, true), nil
}

// SignOut revokes every refresh token held for the account at the Company and deletes its
// tokens (spec 4.6, 5.5), and tells the window.
func (h *Host) SignOut(ctx context.Context, company, account string) error {
	co, err := h.Company(ctx, company)
	if err != nil {
		return err
	}
	if err := h.oauth.SignOut(ctx, co, account); err != nil {
		return fmt.Errorf("signing out of %s (%s) failed: %w", co.Organization.Name, account, err)
	}
	h.log.Info("signed out from the window", "company", co.Identifier, "account", account)
	h.relay.Emit(EventCompaniesChanged)
	return nil
}

// ForgetCompany signs every account out of the Company (revoking its refresh tokens, spec 4.6,
// 5.5), then deletes what Poppydesk keeps about it: its secret bundles (every account, and the
// signed-out identity with its User ID) and its state records. When a sign-out fails nothing
// is deleted, so the user can try again. A later discovery of its domain starts afresh, with
// new User IDs (spec 5.1). The window hears of it (EventCompaniesChanged).
func (h *Host) ForgetCompany(ctx context.Context, identifier string) error {
	co, err := h.Company(ctx, identifier)
	if err != nil {
		return err
	}
	name := co.Organization.Name
	if co.Issuer != "" {
		accts, err := h.oauth.Accounts(ctx, co.Identifier)
		if err != nil {
			return fmt.Errorf("reading the accounts at %s failed, so nothing was forgotten: %w", name, err)
		}
		for _, a := range accts {
			if err := h.oauth.SignOut(ctx, co, a.Account); err != nil {
				return fmt.Errorf("signing out of %s (%s) failed, so nothing was forgotten; try again: %w", name, a.Account, err)
			}
		}
	}
	pairs, err := h.secrets.Companies(ctx)
	if err != nil {
		return fmt.Errorf("forgetting %s failed: listing the keyring items failed: %w", name, err)
	}
	for _, p := range pairs {
		if p[0] != co.Identifier {
			continue
		}
		if err := h.secrets.DeleteCompany(ctx, p[0], p[1]); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("forgetting %s failed: deleting the keyring item of account %q failed: %w", name, p[1], err)
		}
	}
	if err := h.state.ForgetCompany(ctx, co.Identifier); err != nil {
		return fmt.Errorf("forgetting %s failed: %w", name, err)
	}
	h.log.Info("Company forgotten", "company", co.Identifier)
	h.relay.Emit(EventCompaniesChanged)
	return nil
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
