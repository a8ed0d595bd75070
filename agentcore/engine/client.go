package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
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
	// creds are the Credentials (token type, resource) of the access tokens this Client got
	// from the sign-in layer, by token, so the Authorize hook can bind each attempt (spec 4.5).
	// Memory only (DESIGN invariant 5); dropped on sign-out.
	creds map[string]oauth.Credential
	// api is the agentcore/apis Client over sc, for the Company's described destinations
	// (described); built once.
	api       *apis.Client
	described *apis.Described
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
		same := cl.company == c
		old = cl.sess
		cl.mu.Unlock()
		if same {
			e.mu.Unlock()
			return cl, nil
		}
	}
	e.mu.Unlock()

	// The Company as last discovered decides the Session destinations (spec 5.2): an API it no
	// longer lists gets no more signed requests.
	dest, err := c.SessionDestinations()
	if err != nil {
		return nil, fmt.Errorf("engine: the Session destinations of %s: %w", c.Identifier, err)
	}
	// The same version and extensions continue the same Session; new ones need a new Session
	// (spec 3.4), and session.Manager replaces the old one, which is recorded as ended.
	s, err := e.openSession(ctx, c.Identifier, account, c.Version, exts, old)
	if err != nil {
		return nil, err
	}
	hdr := s.ExtensionsHeader()
	cl := &Client{e: e, account: account, company: c, sess: s}
	hooks := transport.Hooks{RenewSession: cl.renew, Rediscover: cl.rediscover}
	if account != "" {
		// The sign-in layer (spec 4.4, 4.5, RFC 9449): each service's token, Bearer or DPoP with a
		// proof, nonces kept, one refresh.
		hooks.Token, hooks.Refresh, hooks.Authorize, hooks.OnResponse = cl.token, cl.refresh, cl.authorize, cl.onResponse
	}
	cl.sc, err = e.tr.Session(transport.SessionConfig{Signer: s, Destinations: dest, Version: s.Version, Extensions: hdr, Hooks: hooks})
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
	rec := store.Session{SID: s.SID, Company: s.Company, Account: s.Account, Version: s.Version, Extensions: extensionStrings(s.Extensions), Started: now}
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
	ns, err := c.e.openSession(ctx, id, c.account, nc.Version, extensionsFor(nc), c.sess)
	if err != nil {
		return transport.Rediscovery{}, err
	}
	c.e.log.InfoContext(ctx, "engine: the Company's protocol version changed; continuing in a new Session (spec 3.4)", "company", id, "old_version", c.sess.Version, "version", nc.Version, "sid", ns.SID)
	c.sess, c.company = ns, nc
	return transport.Rediscovery{Version: nc.Version, Extensions: ns.ExtensionsHeader(), Signer: ns}, nil
}

// token is Hooks.Token (spec 4.5): the account's token for the service u belongs to
// ([ServiceURL], its protected resource metadata read once; a per-service token when its
// resource isn't https://{organization.domain}). An account that isn't signed in sends signed
// out (spec 5.4); one the Company no longer accepts continues signed out with a
// *SignInRequiredError (spec 5.5).
func (c *Client) token(ctx context.Context, u *url.URL) (string, error) {
	cred, err := c.credential(ctx, ServiceURL(c.Company(), u.String()))
	switch {
	case err == nil:
		return cred.Token(), nil
	case errors.Is(err, oauth.ErrNotSignedIn):
		return "", nil
	case errors.Is(err, oauth.ErrSignedOut):
		c.forgetCreds()
		return "", c.signInRequired(ctx, err)
	}
	return "", fmt.Errorf("engine: getting the access token of account %q at %s failed: %w", c.account, c.Identifier(), err)
}

// refresh is Hooks.Refresh (spec 4.4): the rejected token's resource is refreshed once through
// the sign-in layer, unless another request already did. When the service u belongs to now
// names another resource (its metadata was read again after an invalid_token with
// resource_metadata, spec 4.5), a token for that resource is used instead. A refresh token the
// Company no longer accepts (invalid_grant) gives a *SignInRequiredError, and the request
// continues signed out (spec 5.5).
func (c *Client) refresh(ctx context.Context, rejected string, u *url.URL) (string, error) {
	oc := c.e.oauth
	co := c.Company()
	resource := c.resourceOfToken(ctx, rejected)
	svc := ServiceURL(co, u.String())
	if nr, err := oc.ResourceFor(ctx, co, svc); err == nil && nr != resource {
		cred, err := c.credential(ctx, svc)
		if err != nil {
			return "", c.refreshFailed(ctx, err)
		}
		c.e.log.InfoContext(ctx, "engine: the service now needs a token for its own resource (spec 4.5)", "company", co.Identifier, "service", svc, "resource", nr)
		return cred.Token(), nil
	}
	nt, err := oc.RefreshHook(co, c.account, resource)(ctx, rejected, u)
	if err != nil {
		c.forgetCreds()
		return "", c.refreshFailed(ctx, err)
	}
	// The Credential (token type, resource) of the new token, for the Authorize hook.
	if resource == "" {
		resource = "https://" + strings.ToLower(co.Organization.Domain)
	}
	cred, err := oc.AccessToken(ctx, co, c.account, resource)
	if err != nil {
		return "", c.refreshFailed(ctx, err)
	}
	c.remember(cred)
	if cred.Token() != nt {
		c.e.log.DebugContext(ctx, "engine: another request refreshed the access token meanwhile; using the newest", "company", co.Identifier, "account", c.account)
	}
	return cred.Token(), nil
}

// refreshFailed is why a refresh failed, as the pipeline gives it (the request continues signed
// out): a *SignInRequiredError when the Company no longer accepts the refresh token.
func (c *Client) refreshFailed(ctx context.Context, err error) error {
	c.e.log.InfoContext(ctx, "engine: refreshing the access token failed; the request continues signed out (spec 5.5)", "company", c.Identifier(), "account", c.account, "err", err)
	if errors.Is(err, oauth.ErrSignedOut) {
		return c.signInRequired(ctx, err)
	}
	return err
}

// signInRequired is the *SignInRequiredError of a sign-in the Company no longer accepts.
func (c *Client) signInRequired(ctx context.Context, cause error) error {
	sie := &SignInRequiredError{Company: c.Identifier(), Account: c.account, cause: cause}
	c.e.log.InfoContext(ctx, "engine: the Company no longer accepts the account's refresh token; continuing signed out (spec 5.5)", "company", sie.Company, "account", c.account)
	return sie
}

// resourceOfToken is the resource an access token of this Client was issued for ("" for the
// default token): from the Credentials seen, else from the keyring bundle.
func (c *Client) resourceOfToken(ctx context.Context, token string) string {
	c.mu.Lock()
	cred, ok := c.creds[token]
	c.mu.Unlock()
	if ok {
		return cred.Resource
	}
	if b, err := c.e.cfg.Secrets.LoadCompany(ctx, c.Identifier(), c.account); err == nil {
		for _, t := range b.Tokens {
			if t.AccessToken == token {
				return t.Resource
			}
		}
	}
	return ""
}

// authorize is Hooks.Authorize (spec 4.5): "DPoP" and a fresh proof for a DPoP-bound token
// (RFC 9449 §7) through the sign-in layer, "Bearer" for every other token (one a caller put on
// the request itself).
func (c *Client) authorize(ctx context.Context, req *http.Request, token string) error {
	c.mu.Lock()
	cred, ok := c.creds[token]
	c.mu.Unlock()
	if ok {
		return c.e.oauth.Authorize(ctx, c.Company(), c.account, req, cred)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return nil
}

// onResponse is Hooks.OnResponse: a DPoP-Nonce from a resource is kept for the next proof
// (RFC 9449 §9), and an invalid_token challenge with resource_metadata makes the engine read
// the service's protected resource metadata again, since its resource may have changed
// (spec 4.5, RFC 9728 §5.1).
func (c *Client) onResponse(_ context.Context, resp *http.Response) {
	if c.account == "" {
		return
	}
	c.e.oauth.NoteNonce(resp)
	if resp.StatusCode != http.StatusUnauthorized || resp.Request == nil {
		return
	}
	cs, _ := transport.ParseChallenges(resp.Header.Values("WWW-Authenticate"))
	for _, ch := range cs {
		if ch.Param("error") == transport.CodeInvalidToken && ch.Param("resource_metadata") != "" {
			c.e.oauth.ForgetResource(ServiceURL(c.Company(), resp.Request.URL.String()))
			return
		}
	}
}

// maxCreds bounds the Credentials a Client remembers (older ones are dropped together).
const maxCreds = 32

func (c *Client) remember(cred oauth.Credential) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.creds == nil || len(c.creds) >= maxCreds {
		c.creds = map[string]oauth.Credential{}
	}
	c.creds[cred.Token()] = cred
}

func (c *Client) forgetCreds() {
	c.mu.Lock()
	c.creds = nil
	c.mu.Unlock()
}

// credential returns the account's access token for service (spec 4.5) through the sign-in layer:
// the default token, or the service's own token when its protected resource metadata names
// another resource. An MCP server always needs its own token for resource = its url (spec 7).
func (c *Client) credential(ctx context.Context, service string) (oauth.Credential, error) {
	co := c.Company()
	cred, err := c.e.oauth.AccessToken(ctx, co, c.account, service)
	if err != nil {
		return oauth.Credential{}, err
	}
	if isMCP(co, service) && cred.Resource != service {
		return oauth.Credential{}, fmt.Errorf("engine: the MCP server %s has no protected resource metadata whose resource is its url, so Poppydesk cannot request a token for it (spec 7, 4.5); the Company must publish that metadata", service)
	}
	c.remember(cred)
	return cred, nil
}

func isMCP(co *discovery.Company, service string) bool {
	for _, a := range co.Channels.APIs {
		if a.Type == "mcp" && a.URL == service {
			return true
		}
	}
	return false
}

// ServiceURL returns the URL of the service a request URL belongs to, whose protected resource
// metadata says which token it needs (spec 4.5): an MCP server's url, the directory of an
// OpenAPI description (where its relative servers point), a conversation endpoint or an
// extension endpoint, the longest that contains rawURL; else the URL's origin.
func ServiceURL(co *discovery.Company, rawURL string) string {
	// norm is scheme://host[:port]/path lowercased except the path, without query, fragment
	// or trailing slash, for comparing; "" for a string that is not an absolute URL (a
	// scheme-relative "//host" names no service).
	norm := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return ""
		}
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	clean := norm(rawURL)
	if clean == "" {
		return rawURL
	}
	best, bestKey := "", ""
	consider := func(svc string, prefix bool) {
		key := norm(svc)
		if key == "" || len(key) <= len(bestKey) {
			return
		}
		if clean == key || prefix && strings.HasPrefix(clean, key+"/") {
			best, bestKey = strings.TrimSuffix(svc, "/"), key
		}
	}
	for _, a := range co.Channels.APIs {
		switch a.Type {
		case "mcp":
			if clean == norm(a.URL) {
				return a.URL // spec 7: the url from poppy.json, exactly
			}
		case "openapi":
			if i := strings.LastIndex(a.URL, "/"); i > len("https://") {
				consider(a.URL[:i], true)
			}
		}
	}
	if ag := co.Channels.Agent; ag != nil {
		for _, p := range ag.Protocols {
			consider(p.Endpoint, true)
		}
	}
	for _, es := range co.Extensions {
		for _, x := range es {
			if ep := x.Endpoint(); ep != "" {
				consider(ep, true)
			}
		}
	}
	if best == "" {
		u, _ := url.Parse(rawURL)
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
	}
	return best
}

// SignInRequiredError says the Company no longer accepts the account's sign-in: refreshing
// the access token got invalid_grant (the refresh token was revoked, expired, or the User
// disconnected Poppydesk in the account settings). Poppydesk removed the tokens and the request
// continued signed out in the same Session (spec 5.5); the User must sign in again for account
// access, and Poppydesk does not do so unless the User asks. errors.Is(err, oauth.ErrSignedOut)
// is true. The pipeline gives it as Response.SignedOutReason, or as the Reason of a
// *transport.SignedOutError around the signed-out attempt's error.
type SignInRequiredError struct {
	Company, Account string
	cause            error
}

func (e *SignInRequiredError) Error() string {
	return fmt.Sprintf("the sign-in of account %q at %s is no longer valid (the Company no longer accepts its refresh token: revoked, expired or disconnected in the account settings); Poppydesk continued signed out. Sign in again to use the account (spec 5.5)", e.Account, e.Company)
}

// Unwrap gives the refresh failure (matching oauth.ErrSignedOut).
func (e *SignInRequiredError) Unwrap() error { return e.cause }

// Is makes errors.Is(err, transport.ErrSignedOut) true: the request continues signed out.
func (e *SignInRequiredError) Is(target error) bool { return target == transport.ErrSignedOut }

// Do sends req in this Client's Session through the signed-request pipeline
// (transport.SessionClient: spec 5.2, 5.6, 7). For a signed-in Client (account not ""), when
// req.AccessToken is empty, the account's access token is found without any caller handling it
// (the Token hook), put on as Bearer or DPoP with a proof (RFC 9449), refreshed once on
// invalid_token, sent again once on use_dpop_nonce. When the Company no longer accepts the
// refresh token (invalid_grant), the request continues signed out (spec 5.5): its error is a
// *transport.SignedOutError whose Reason is a *SignInRequiredError, or, when that attempt
// succeeded, the response has SignedOut set and the *SignInRequiredError in SignedOutReason.
// Other errors are transport's typed errors (*transport.ProtocolError, including
// insufficient_scope and 401 challenges with the needed scopes; *transport.NotSentError,
// *transport.RedirectError, ...).
func (c *Client) Do(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	return c.sc.Do(ctx, req)
}

// Session is the Client's signed-request pipeline, for layers that read error answers
// themselves (Send) or hand a RoundTripper to another client.
func (c *Client) Session() *transport.SessionClient { return c.sc }

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

// extensionStrings are the extensions as stored with a Session: each one list member of
// Poppy-Extensions, e.g. `"operations";v="2"`.
func extensionStrings(exts []session.Extension) []string {
	out := make([]string, 0, len(exts))
	for _, x := range exts {
		s, err := headers.FormatExtensions([]session.Extension{x})
		if err == nil {
			out = append(out, s)
		}
	}
	return out
}
