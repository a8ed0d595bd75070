package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Client sends signed requests in one Session of the User at one Company, for one account
// ("" when signed out): a transport.SessionClient whose signer is the Session's, limited to the
// Company's Session destinations (spec 5.2), with Poppy-Version and Poppy-Extensions (spec 3.4),
// and whose hooks start a new Session after session_ended (spec 5.5) or a version change found
// by fetching poppy.json again after version_unsupported (spec 3.4). The engine keeps one
// Client per (Company, account); it is safe for concurrent use.
type Client struct {
	e       *Engine
	account string
	sc      *transport.SessionClient

	mu      sync.Mutex
	company *discovery.Company
	sess    *session.Session
}

// Client returns the Client for (companyIdentifier, account), starting a Session if needed.
// The Company must have been discovered (by this engine or an earlier run). account is the
// account label ("" signed out); each account has its own Session (spec 5.4).
func (e *Engine) Client(ctx context.Context, companyIdentifier, account string) (*Client, error) {
	c, err := e.Company(ctx, companyIdentifier)
	if err != nil {
		return nil, err
	}
	exts := extensionsFor(c)
	key := clientKey{c.Identifier, account}
	var old *session.Session
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, errors.New("engine: the engine was closed")
	}
	if cl := e.clients[key]; cl != nil {
		cl.mu.Lock()
		same := cl.company == c || cl.sess.Version == c.Version && sameExtensions(cl.sess.Extensions, exts)
		old = cl.sess
		cl.mu.Unlock()
		if same {
			e.mu.Unlock()
			return cl, nil
		}
	}
	e.mu.Unlock()

	dest, err := c.SessionDestinations()
	if err != nil {
		return nil, fmt.Errorf("engine: the Session destinations of %s: %w", c.Identifier, err)
	}
	// A new version or set of extensions needs a new Session (spec 3.4); session.Manager
	// replaces the old one, which is recorded as ended.
	s, err := e.openSession(ctx, c.Identifier, account, c.Version, exts, old)
	if err != nil {
		return nil, err
	}
	hdr, err := extensionsHeader(exts)
	if err != nil {
		return nil, err
	}
	cl := &Client{e: e, account: account, company: c, sess: s}
	cl.sc, err = e.tr.Session(transport.SessionConfig{Signer: s, Destinations: dest, Version: s.Version, Extensions: hdr,
		Hooks: transport.Hooks{RenewSession: cl.renew, Rediscover: cl.rediscover, Refresh: cl.refresh}})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.mu.Lock()
	e.clients[key] = cl
	e.mu.Unlock()
	return cl, nil
}

// openSession opens (or reuses) the Session for (company, account) and records a new one in
// the state store; old, when given, is recorded as ended.
func (e *Engine) openSession(ctx context.Context, company, account, version string, exts []session.Extension, old *session.Session) (*session.Session, error) {
	s, err := e.sessions.Open(ctx, company, session.Options{Account: account, AgentID: e.cfg.AgentID, Version: version, Extensions: exts})
	if err != nil {
		return nil, fmt.Errorf("engine: starting a Session with %s: %w", company, err)
	}
	if err := e.recordSession(ctx, s, old); err != nil {
		return nil, err
	}
	return s, nil
}

// recordSession writes s (when new) and the end of old (when given and different).
func (e *Engine) recordSession(ctx context.Context, s, old *session.Session) error {
	now := e.now()
	if old != nil && old.SID != s.SID {
		e.mu.Lock()
		wasOpen := e.open[old.SID]
		delete(e.open, old.SID)
		e.mu.Unlock()
		if wasOpen {
			if err := e.cfg.State.EndSession(ctx, old.SID, now); err != nil {
				e.log.WarnContext(ctx, "engine: could not record the end of a Session", "company", old.Company, "sid", old.SID, "err", err)
			}
		}
	}
	e.mu.Lock()
	known := e.open[s.SID]
	e.open[s.SID] = true
	e.mu.Unlock()
	if known {
		return nil
	}
	rec := SessionRecord{SID: s.SID, Company: s.Company, Account: s.Account, Version: s.Version, Extensions: extensionStrings(s.Extensions), Started: now}
	if err := e.cfg.State.AddSession(ctx, rec); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// spec 5.2: a sid is never reused. session.Manager makes 128-bit random sids, so
			// this means the state store was shared with another run's engine.
			return fmt.Errorf("engine: the new Session's sid was already used; refusing to reuse it (spec 5.2): %w", err)
		}
		return fmt.Errorf("engine: recording the Session with %s: %w", s.Company, err)
	}
	e.log.DebugContext(ctx, "engine: Session started", "company", s.Company, "account", s.Account, "sid", s.SID, "version", s.Version, "extensions", rec.Extensions)
	return nil
}

// renew is Hooks.RenewSession: a new Session with a new sid after session_ended (spec 5.5).
func (c *Client) renew(ctx context.Context) (transport.Signer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns, err := c.e.sessions.Renew(ctx, c.sess)
	if err != nil {
		return nil, fmt.Errorf("starting a new Session after session_ended: %w", err)
	}
	if err := c.e.recordSession(ctx, ns, c.sess); err != nil {
		return nil, err
	}
	c.e.log.InfoContext(ctx, "engine: the Company ended the Session; continuing in a new one (spec 5.5)", "company", ns.Company, "old_sid", c.sess.SID, "sid", ns.SID)
	c.sess = ns
	return ns, nil
}

// rediscover is Hooks.Rediscover: poppy.json again without any cache, and a new Session when
// the chosen version changed (spec 3.4).
func (c *Client) rediscover(ctx context.Context) (transport.Rediscovery, error) {
	c.mu.Lock()
	domain, id := c.company.Organization.Domain, c.company.Identifier
	c.mu.Unlock()
	nc, err := c.e.discover(ctx, domain, discovery.NoCache())
	if err != nil {
		return transport.Rediscovery{}, err
	}
	if nc.Identifier != id {
		return transport.Rediscovery{}, fmt.Errorf("the Company's identifier changed from %s to %s, so its User IDs and Sessions change too (spec 3.2); open a client for the new identifier", id, nc.Identifier)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if nc.Version == c.sess.Version {
		c.company = nc
		return transport.Rediscovery{Version: nc.Version}, nil
	}
	exts := extensionsFor(nc)
	hdr, err := extensionsHeader(exts)
	if err != nil {
		return transport.Rediscovery{}, err
	}
	ns, err := c.e.openSession(ctx, id, c.account, nc.Version, exts, c.sess)
	if err != nil {
		return transport.Rediscovery{}, err
	}
	c.e.log.InfoContext(ctx, "engine: the Company's protocol version changed; continuing in a new Session (spec 3.4)", "company", id, "old_version", c.sess.Version, "version", nc.Version, "sid", ns.SID)
	c.sess, c.company = ns, nc
	return transport.Rediscovery{Version: nc.Version, Extensions: hdr, Signer: ns}, nil
}

// refresh is Hooks.Refresh (spec 4.4), through Config.Refresh.
func (c *Client) refresh(ctx context.Context, rejected string) (string, error) {
	if c.e.cfg.Refresh == nil || c.account == "" {
		return "", errors.New("no way to refresh the access token")
	}
	return c.e.cfg.Refresh(ctx, c.Identifier(), c.account, rejected)
}

// Do sends req in this Client's Session (spec 5.2, 5.6, 7). For a signed-in Client (account
// not ""), when req.AccessToken is empty, the account's access token for the request's
// resource is taken from the keyring (spec 4.5), refreshed first through Config.Refresh when it
// has expired; no caller ever handles it. Errors are transport's typed errors
// (*transport.ProtocolError, *transport.DestinationError, *transport.RedirectError, ...).
func (c *Client) Do(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	if c.account != "" && req.AccessToken == "" {
		tok, err := c.accessToken(ctx, req.URL)
		if err != nil {
			return nil, err
		}
		if tok != "" {
			r := *req
			r.AccessToken = tok
			req = &r
		}
	}
	resp, err := c.sc.Do(ctx, req)
	if err == nil && resp.SignedOut {
		c.e.log.InfoContext(ctx, "engine: the Company rejected the access token; the request continued signed out (spec 5.5)", "company", c.Identifier(), "account", c.account)
	}
	return resp, err
}

// accessToken returns the account's access token for the resource of rawURL ("" when none).
func (c *Client) accessToken(ctx context.Context, rawURL string) (string, error) {
	b, err := c.e.cfg.Secrets.LoadCompany(ctx, c.Identifier(), c.account)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("engine: reading the access token for %s from the keyring: %w; unlock the keyring and try again", c.Identifier(), err)
	}
	c.mu.Lock()
	domainOrigin := "https://" + strings.ToLower(c.company.Organization.Domain)
	c.mu.Unlock()
	origin := ""
	if u, err := url.Parse(rawURL); err == nil {
		origin = "https://" + strings.TrimSuffix(strings.ToLower(u.Host), ":443")
	}
	var tok *store.Token
	for i := range b.Tokens {
		t := &b.Tokens[i]
		if t.AccessToken == "" {
			continue
		}
		// spec 4.5: the token for https://{organization.domain} (Resource "") serves the
		// domain's APIs; a resource token serves its resource only.
		if t.Resource == origin || t.Resource == "" && origin == domainOrigin {
			tok = t
			break
		}
	}
	if tok == nil {
		return "", nil
	}
	if !tok.ExpiresAt.IsZero() && !c.e.now().Add(10*time.Second).Before(tok.ExpiresAt) && c.e.cfg.Refresh != nil {
		nt, err := c.e.cfg.Refresh(ctx, c.Identifier(), c.account, tok.AccessToken)
		if err == nil && nt != "" {
			return nt, nil
		}
		c.e.log.InfoContext(ctx, "engine: refreshing an expired access token failed; sending the old one", "company", c.Identifier(), "account", c.account, "err", err)
	}
	return tok.AccessToken, nil
}

// Identifier is the Company identifier (spec 3.2).
func (c *Client) Identifier() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.company.Identifier
}

// Company is the Company as last discovered.
func (c *Client) Company() *discovery.Company {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.company
}

// Account is the account label ("" signed out).
func (c *Client) Account() string { return c.account }

// SID is the current Session's sid (not secret; spec 5.2).
func (c *Client) SID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.SID
}

// Version is the current Session's Poppy-Version.
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.Version
}

// extensionsFor lists the extensions to declare to c: those this engine implements, in the
// version the Company lists (spec 3.3, 3.4). "operations" is declared only when the Company
// lists its version "2".
func extensionsFor(c *discovery.Company) []session.Extension {
	var out []session.Extension
	for _, impl := range implementedExtensions {
		for _, entry := range c.Extensions[impl.Name] {
			if entry.Version == impl.Version {
				out = append(out, impl)
				break
			}
		}
	}
	return out
}

func sameExtensions(a, b []session.Extension) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// extensionsHeader is the Poppy-Extensions value: an RFC 9651 List of Strings with a String "v"
// parameter (spec 3.4), "" for none. agentcore/session writes the same value when it signs.
func extensionsHeader(exts []session.Extension) (string, error) {
	if len(exts) == 0 {
		return "", nil
	}
	list := make(httpsfv.List, 0, len(exts))
	for _, x := range exts {
		it := httpsfv.NewItem(x.Name)
		it.Params.Add("v", x.Version)
		list = append(list, it)
	}
	s, err := httpsfv.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("engine: serializing Poppy-Extensions: %w", err)
	}
	return s, nil
}

// extensionStrings are the extensions as stored with a Session: each one list member of
// Poppy-Extensions, e.g. `"operations";v="2"`.
func extensionStrings(exts []session.Extension) []string {
	out := make([]string, 0, len(exts))
	for _, x := range exts {
		s, err := extensionsHeader([]session.Extension{x})
		if err == nil {
			out = append(out, s)
		}
	}
	return out
}
