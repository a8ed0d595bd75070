package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Config configures an [Engine].
type Config struct {
	// Transport is the HTTP policy: zero for production; in dev mode DevHosts and DevRootCAs of
	// the reference Company (refcompany.Server.ClientConfig). Its Logger and Now default to the
	// engine's; an Observer set here is called after the engine's own (exchange log).
	Transport transport.Config
	// Identity is the Personal Agent's published identity (spec 4.1): client_id and, by
	// default, jwks_uri next to it. In dev mode the reference Company serves it on
	// agent.localhost (mount [Engine.Agent]'s Handler with refcompany.Server.AddHost).
	Identity identity.Config
	// Operator signs with the keys published at jwks_uri. Nil: identity.LocalOperator over
	// Secrets (self-operated; root key in the OS keyring).
	Operator identity.Operator
	// Secrets keeps keys, User IDs and tokens (the OS keyring through vault.Keyring). Required.
	Secrets store.Secrets
	// State keeps what is not secret (*vault.State, or store.NewMemoryEngineState in pure unit
	// tests). Required.
	State store.EngineState
	// Logger receives the engine's logs. The engine wraps its handler so that every attribute
	// goes through redact.ReplaceAttr. Nil: text on stderr at Info, redacted.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Versions are the protocol versions implemented (default {discovery.Implemented}, "0.4").
	Versions []string
	// DelegationLifetime and RotateBefore configure delegated keys (session.Config defaults:
	// 12 h and 1 h; spec 5.2).
	DelegationLifetime, RotateBefore time.Duration
	// AgentID sends the User's Agent ID for each Company in every Session (spec 5.1). A
	// Personal Agent with one agent leaves it off (the default).
	AgentID bool
	// Sleep is the sign-in layer's wait between Device Sign-In polls (RFC 8628 §3.5); nil: the
	// Transport's Sleep. Tests shorten it.
	Sleep func(ctx context.Context, d time.Duration) error
	// DirectTimeout bounds a Direct Sign-In (0: oauth's default, 10 minutes).
	DirectTimeout time.Duration
	// OnExchange, when set, is called with each exchange once it is stored in the exchange
	// log (for the inspector's live view). It runs on the log's writer goroutine: return fast.
	OnExchange func(store.Exchange)
}

// Extension versions this engine implements and declares when a Company lists them (spec 3.3,
// 3.4): the Operations extension, version 2.
var implementedExtensions = []session.Extension{{Name: "operations", Version: "2"}}

// Engine is the protocol engine: one transport, discovery with a persistent cache, the
// Personal Agent's identity, its sign-in layer, Sessions, and the exchange log. Safe for
// concurrent use.
type Engine struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	tr       *transport.Transport
	disc     *discovery.Discoverer
	agent    *identity.Agent
	oauth    *oauth.Client
	sessions *session.Manager
	sink     *exchangeSink
	descs    *apis.Descriptions // OpenAPI descriptions, shared by every Client (spec 7)

	mu        sync.Mutex
	companies map[string]*discovery.Company // by identifier
	stored    map[string]storedDoc          // identifier → the last stored record document
	hosts     map[string]string             // URL authority → Company identifier (exchange log)
	clients   map[clientKey]*Client
	open      map[string]bool // sids recorded and not yet ended
	closed    bool

	descMu    sync.Mutex
	described map[string]describedEntry // by Company identifier (described.go)
}

type clientKey struct{ company, account string }

// New builds an Engine. It does no I/O: the root key, User IDs and documents are loaded when
// first needed.
func New(cfg Config) (*Engine, error) {
	if cfg.Secrets == nil || cfg.State == nil {
		return nil, errors.New("engine: Config needs Secrets (the OS keyring) and State (the state database)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{ReplaceAttr: redact.ReplaceAttr}))
	}
	log := newRedactingLogger(cfg.Logger)
	e := &Engine{cfg: cfg, log: log, now: cfg.Now, companies: map[string]*discovery.Company{}, stored: map[string]storedDoc{},
		hosts: map[string]string{}, clients: map[clientKey]*Client{}, open: map[string]bool{}}

	op := cfg.Operator
	if op == nil {
		op = identity.NewLocalOperator(cfg.Secrets, cfg.Now)
	}
	agent, err := identity.New(cfg.Identity, op, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("engine: the Personal Agent's identity: %w", err)
	}
	e.agent = agent

	e.sink = newExchangeSink(cfg.State, log, cfg.Now, e.companyOfHost, cfg.OnExchange)
	tc := cfg.Transport
	if tc.Logger == nil {
		tc.Logger = log
	} else {
		tc.Logger = newRedactingLogger(tc.Logger)
	}
	if tc.Now == nil {
		tc.Now = cfg.Now
	}
	if tc.Inspect == nil {
		// Decoded claims, cause and findings, taken before redaction (agentcore/inspect) and
		// decoded by the exchange log's writer, off the request's path.
		tc.Inspect = inspect.Defer
	}
	extra := tc.Observer
	tc.Observer = func(ex transport.Exchange) {
		e.sink.observe(ex)
		if extra != nil {
			extra(ex)
		}
	}
	if e.tr, err = transport.New(tc); err != nil {
		e.sink.close(context.Background())
		return nil, fmt.Errorf("engine: %w", err)
	}
	// OpenAPI descriptions are kept like discovery documents: the same RFC 9111 cache over the
	// state database, parsed once per version and shared (spec 7) by discovery (the request URLs
	// each describes), every Client, the approval queue, the model's tools and the window.
	if e.descs, err = apis.NewDescriptions(apis.DescriptionsConfig{Transport: e.tr, Now: cfg.Now, Logger: log,
		Cache: cacheAdapter{st: cfg.State, now: cfg.Now, company: e.companyOfHost}}); err != nil {
		e.close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.disc, err = discovery.New(discovery.Config{Transport: e.tr, Cache: cacheAdapter{st: cfg.State, now: cfg.Now, company: e.companyOfHost},
		Known: knownAdapter{st: cfg.State}, Now: cfg.Now, Logger: log, Versions: cfg.Versions, Describer: e.descs})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.sessions, err = session.NewManager(session.Config{Secrets: cfg.Secrets, Delegator: agent, Now: cfg.Now,
		DelegationLifetime: cfg.DelegationLifetime, RotateBefore: cfg.RotateBefore, Logger: log})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	// The sign-in layer runs over the engine's own transport, identity and keyring (spec 4), so
	// every signed-in request gets its token one way.
	e.oauth, err = oauth.New(oauth.Config{Transport: e.tr, Identity: agent, Secrets: cfg.Secrets, Now: cfg.Now, Sleep: cfg.Sleep,
		Logger: log, DirectTimeout: cfg.DirectTimeout})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("engine: the sign-in layer: %w", err)
	}
	return e, nil
}

func (e *Engine) close() {
	e.tr.Close()
	e.sink.close(context.Background())
}

// Close records the end of every Session this engine started (spec 5.5: the Personal Agent
// stops using their sids; a new run starts new Sessions), stores the queued exchanges, and
// drops idle connections. The Engine must not be used afterwards.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var sids []string
	for sid := range e.open {
		sids = append(sids, sid)
	}
	e.open = map[string]bool{}
	e.mu.Unlock()
	var errs []error
	now := e.now()
	for _, sid := range sids {
		if err := e.cfg.State.EndSession(ctx, sid, now); err != nil {
			errs = append(errs, fmt.Errorf("recording the end of a Session: %w", err))
		}
	}
	e.tr.Close()
	if err := e.sink.close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("storing the last exchanges: %w", err))
	}
	return errors.Join(errs...)
}

// Agent is the Personal Agent's identity: client metadata, JWKS (Handler, Export) and client
// assertions for the sign-in layer (spec 4.1).
func (e *Engine) Agent() *identity.Agent { return e.agent }

// OAuth is the engine's sign-in layer (spec 4): Direct and Device Sign-In, the account's
// tokens in the keyring, per-service tokens (4.5), refresh (4.4), DPoP (RFC 9449) and
// sign-out. Every signed-in [Client] takes its tokens from it.
func (e *Engine) OAuth() *oauth.Client { return e.oauth }

// Transport is the engine's HTTP transport, for layers that send requests without a Session
// (OAuth endpoints use its NoRedirectClient; spec 3, 4).
func (e *Engine) Transport() *transport.Transport { return e.tr }

// Logger is the engine's logger: every attribute passes through redact.ReplaceAttr. Layers
// built on the engine log through it.
func (e *Engine) Logger() *slog.Logger { return e.log }

// FlushExchanges waits until every exchange observed so far is stored in the exchange log.
func (e *Engine) FlushExchanges(ctx context.Context) error { return e.sink.flush(ctx) }

// Discover finds and verifies the Company at domain (spec 3; "example.com", or host:port in dev
// mode), using the persistent RFC 9111 cache of discovery documents, and stores the verified
// Company in the state store. Errors are *discovery.CheckError naming the check and section.
func (e *Engine) Discover(ctx context.Context, domain string) (*discovery.Company, error) {
	return e.discover(ctx, domain)
}

// DiscoverAnew is Discover for a person's explicit request to verify the Company now (the
// window's Companies → Discover, the model's discover_company): every discovery document is
// fetched again without the cached copy (discovery.NoCache), so a change the Company just made
// is seen at once, and the fresh copies are cached for the engine's ordinary use, which keeps
// honouring the Company's HTTP caching (RFC 9111).
func (e *Engine) DiscoverAnew(ctx context.Context, domain string) (*discovery.Company, error) {
	return e.discover(ctx, domain, discovery.NoCache())
}

func (e *Engine) discover(ctx context.Context, domain string, opts ...discovery.Option) (*discovery.Company, error) {
	c, err := e.disc.Discover(ctx, domain, opts...)
	if err != nil {
		e.log.InfoContext(ctx, "engine: discovery failed", "domain", domain, "err", err)
		return nil, err
	}
	e.mu.Lock()
	last := e.stored[c.Identifier]
	e.mu.Unlock()
	// Most discoveries find the Company as stored: compared without encoding the request URLs
	// of its descriptions (thousands for a big API), it is encoded only when it changed.
	var doc []byte
	changed := last.co == nil || !sameCompany(last.co, c)
	if changed {
		if doc, err = encodeCompany(c); err != nil {
			return nil, fmt.Errorf("engine: encoding the Company %s: %w", c.Identifier, err)
		}
		changed = !bytes.Equal(last.doc, doc)
	}
	if !changed && last.co != nil {
		// Unchanged: the Company already in use stays the one in use, so what is built from it
		// (its Clients with their Session destinations, the descriptions' views for them) is
		// reused instead of built again for every call that names the Company by its domain.
		c = last.co
	}
	e.mu.Lock()
	e.companies[c.Identifier] = c
	for _, h := range companyHosts(c) {
		e.hosts[h] = c.Identifier
	}
	e.mu.Unlock()
	if changed {
		rec := store.Company{Identifier: c.Identifier, Domain: strings.ToLower(c.Organization.Domain), Name: c.Organization.Name, Document: doc, FetchedAt: e.now()}
		rec.Agent, _ = c.AgentEndpoint()
		if err := e.cfg.State.PutCompany(ctx, rec); err != nil {
			return nil, fmt.Errorf("engine: storing the discovered Company %s: %w", c.Identifier, err)
		}
		e.mu.Lock()
		e.stored[c.Identifier] = storedDoc{doc: doc, co: c}
		e.mu.Unlock()
	}
	if c.IssuerRemoved {
		e.log.WarnContext(ctx, "engine: the Company removed its issuer, so its identifier changed; new User IDs and Sessions are used (spec 3.2)", "domain", domain, "identifier", c.Identifier)
	}
	return c, nil
}

// FetchPublic GETs a public document of a Company that is not a discovery document, such as its
// excluded tasks (spec 9.1) or a skill artifact (9.4): no credentials and no Session header,
// redirects only to HTTPS, the address policy, and the persistent RFC 9111 cache of discovery
// documents (discovery.Discoverer.FetchPublic).
func (e *Engine) FetchPublic(ctx context.Context, rawURL, accept string, limit int, opts ...discovery.Option) (discovery.Public, error) {
	return e.disc.FetchPublic(ctx, rawURL, accept, limit, opts...)
}

// Company returns the Company with this identifier (spec 3.2), as last discovered by this
// engine or, after a restart, as stored in the state store. It does not fetch anything; an
// error matching fs.ErrNotExist means it was never discovered.
func (e *Engine) Company(ctx context.Context, identifier string) (*discovery.Company, error) {
	e.mu.Lock()
	c := e.companies[identifier]
	e.mu.Unlock()
	if c != nil {
		return c, nil
	}
	rec, err := e.cfg.State.GetCompany(ctx, identifier)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the Company %s was never discovered; discover its domain first (spec 3): %w", identifier, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading the Company %s: %w", identifier, err)
	}
	c, err = decodeCompany(rec.Document)
	if err != nil {
		return nil, fmt.Errorf("engine: Company %s: %w", identifier, err)
	}
	e.mu.Lock()
	if cur := e.companies[identifier]; cur != nil {
		c = cur
	} else {
		e.companies[identifier] = c
		e.stored[identifier] = storedDoc{doc: rec.Document, co: c}
		for _, h := range companyHosts(c) {
			e.hosts[h] = c.Identifier
		}
	}
	e.mu.Unlock()
	return c, nil
}

// CompanyNames returns the verified organization name and domain (spec 3) of each of the
// Companies ids that was discovered, for lists: from memory, else from the state store's name
// column, else by reading the stored Company (a store written before that column). Unknown
// identifiers, and stored Companies that can't be read (logged), have no entry.
func (e *Engine) CompanyNames(ctx context.Context, ids []string) (map[string]store.CompanyName, error) {
	out := make(map[string]store.CompanyName, len(ids))
	var missing []string
	e.mu.Lock()
	for _, id := range ids {
		if c := e.companies[id]; c != nil {
			out[id] = store.CompanyName{Name: c.Organization.Name, Domain: c.Organization.Domain}
		} else if !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	e.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	names, err := e.cfg.State.CompanyNames(ctx, missing)
	if err != nil {
		return nil, fmt.Errorf("engine: reading the names of Companies: %w", err)
	}
	for _, id := range missing {
		n, ok := names[id]
		switch {
		case !ok: // never discovered
			continue
		case n.Name != "":
			out[id] = n
			continue
		}
		c, err := e.Company(ctx, id) // stored before the name column
		if err != nil {
			e.log.WarnContext(ctx, "engine: a stored Company could not be read for its name", "company", id, "err", err)
			continue
		}
		out[id] = store.CompanyName{Name: c.Organization.Name, Domain: c.Organization.Domain}
	}
	return out, nil
}

// companyOfHost names the Company an exchange with host belongs to ("" when unknown).
func (e *Engine) companyOfHost(host string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hosts[strings.TrimSuffix(host, ":443")]
}

// companyHosts lists the authorities (host[:port], lowercased) of a Company's URLs.
func companyHosts(c *discovery.Company) []string {
	urls := []string{"https://" + c.Organization.Domain, c.Issuer, c.PoppyJSONURL, c.DocumentURL}
	if as := c.AuthorizationServer; as != nil {
		urls = append(urls, as.TokenEndpoint, as.RevocationEndpoint, as.AuthorizationEndpoint, as.DeviceAuthorizationEndpoint)
	}
	for _, a := range c.Channels.APIs {
		urls = append(urls, a.URL)
	}
	if c.Channels.Agent != nil {
		for _, p := range c.Channels.Agent.Protocols {
			urls = append(urls, p.Endpoint)
		}
	}
	if c.Channels.Web != nil {
		urls = append(urls, c.Channels.Web.BrowserSessionEndpoint)
	}
	if c.Channels.Feedback != nil {
		urls = append(urls, c.Channels.Feedback.Endpoint)
	}
	var out []string
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			out = append(out, strings.TrimSuffix(strings.ToLower(u.Host), ":443"))
		}
	}
	return out
}

// SignOut signs account out at the Company (spec 4.6, 5.5): the sign-in layer revokes every
// refresh token held for it at the revocation endpoint, then deletes its tokens from the keyring. The
// account's Sessions continue signed out: later requests carry the Session header without an
// access token. If the Company does not confirm a revocation, the tokens are kept so the User
// can try again, and the error says so.
func (e *Engine) SignOut(ctx context.Context, company, account string) error {
	if account == "" {
		return errors.New("engine: name the account to sign out of; the signed-out Session has no account (spec 5.4)")
	}
	co, err := e.Company(ctx, company)
	if err != nil {
		return err
	}
	if err := e.oauth.SignOut(ctx, co, account); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.mu.Lock()
	cl := e.clients[clientKey{co.Identifier, account}]
	e.mu.Unlock()
	if cl != nil {
		cl.forgetCreds()
	}
	e.log.InfoContext(ctx, "engine: signed out; the account's Sessions continue signed out (spec 5.5)", "company", co.Identifier, "account", account)
	return nil
}

// APIClient returns the agentcore/apis Client for (company, account) in that account's Session
// (spec 5.2, 5.4): it sends through the Client's signed-request pipeline (Client.Session), so
// every API and MCP request gets the account's token for its service (spec 4.5, 7), Bearer or
// DPoP with a fresh proof (RFC 9449), one refresh on invalid_token (a refresh token the Company
// no longer accepts continues signed out with a *SignInRequiredError), use_dpop_nonce sent again
// once, and the Session's renewals.
func (e *Engine) APIClient(ctx context.Context, company, account string) (*apis.Client, error) {
	cl, err := e.Client(ctx, company, account)
	if err != nil {
		return nil, err
	}
	return cl.APIs()
}

// APIs is the agentcore/apis Client over this Client's pipeline, built once for the Company's
// described destinations (describedOf).
func (c *Client) APIs() (*apis.Client, error) {
	d := c.e.describedOf(c.Company())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api != nil && c.described == d {
		return c.api, nil
	}
	ac, err := apis.New(apis.Config{Session: c.sc, Described: d, Descriptions: c.e.descs, Now: c.e.now, Logger: c.e.log})
	if err != nil {
		return nil, err
	}
	c.api, c.described = ac, d
	return ac, nil
}
