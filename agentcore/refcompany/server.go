package refcompany

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Host names of the reference Company (devmode notes): all served by one TLS listener.
const (
	ShopHost  = "shop.localhost"      // website, poppy.json, APIs, protocol endpoints
	AuthHost  = "auth.shop.localhost" // the OAuth issuer
	WWWHost   = "www.shop.localhost"  // redirects its poppy.json to ShopHost
	AgentHost = "agent.localhost"     // for the Personal Agent's client metadata and JWKS (AddHost)
	OtherHost = "other.shop.localhost"
)

// DevHosts are the host names a client must map to 127.0.0.1 to reach the reference Company.
var DevHosts = []string{ShopHost, AuthHost, WWWHost, AgentHost, OtherHost}

// Options configure a reference Company.
type Options struct {
	// Listen is the TCP address (default "127.0.0.1:0"). Only loopback addresses are accepted.
	Listen string
	// Faults switched on at start (see the Fault constants).
	Faults []string
	// BurstCount is how many 429s the 429-burst fault answers (default 2), with RetryAfter
	// seconds in Retry-After (default 1).
	BurstCount int
	RetryAfter int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger (nil: discard).
	Logger *slog.Logger
	// AgentHosts and AgentRootCAs let the Company fetch the client metadata and JWKS of a
	// Personal Agent published elsewhere on loopback (an operator under development, spec
	// 4.1): these host names map to 127.0.0.1 too, and these CAs are trusted for dev hosts only.
	AgentHosts   []string
	AgentRootCAs []*x509.Certificate
	// CA signs the Company's certificates (nil: a new one for this run; LoadOrCreateCA keeps
	// one across runs).
	CA *CA
}

// Request is one request the reference Company received.
type Request struct {
	Method string
	Host   string // as sent, with port
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	At     time.Time
}

// Server is a running reference Company.
type Server struct {
	opts Options
	now  func() time.Time
	log  *slog.Logger
	ca   *CA
	ln   net.Listener
	srv  *http.Server
	cn   connTracker // connections accepted and still open (received.go)

	// Port is the listener's port; Domain is "shop.localhost:PORT" (organization.domain).
	Port   int
	Domain string

	mu        sync.Mutex
	records   []Request
	faults    map[string]bool
	burstLeft int
	hosts     map[string]http.Handler
	issuer    IssuerMode
	editPoppy func(doc map[string]any)
	editAS    func(doc map[string]any)
	editPR    func(doc map[string]any)
	cacheCtl  string
	mainVer   string
	tokens    map[string]AccessToken
	ended     map[string]bool // sids of Sessions the session-ended fault ended
	// dpopNonce is the nonce the resource-dpop-nonce fault asks for in resource DPoP proofs.
	dpopNonce string
	// apiOwnResource: the Orders API (/api/...) accepts only tokens for APIResource (SetAPIResource).
	apiOwnResource bool
	// feedback holds the reports the feedback endpoint accepted (coverage.go).
	feedback []FeedbackReport
	// extraAPIs are the OpenAPI descriptions AddOpenAPI serves besides the Shop API (extra_api.go).
	extraAPIs []*extraAPI

	// The state of the authorization server, the Operations extension, the browser-session
	// endpoint and the Company Agent belong to this Server, so they end with it (stateOnce
	// builds them, also for a Server not made by New).
	stateOnce sync.Once
	authSt    *authServer
	opSt      *opStore
	browserSt *browserState
	agentSt   *agentStore

	verifier         sessionVerifier
	verifierNoIssuer sessionVerifier
	// verifierLenient is the verifier of FaultSessionIatUnchecked, for verifierLenientFor (lenient.go).
	verifierLenient    sessionVerifier
	verifierLenientFor string
	// unkept is the state of the faults of unkept.go.
	unkept unkeptState
	client *transport.Transport
	// stopped is closed by Close, so requests a fault holds open end with the Server.
	stopped   chan struct{}
	closeOnce sync.Once
}

// IssuerMode selects what the domain's protected resource metadata says (spec 3.2).
type IssuerMode int

const (
	// IssuerListed (default): the metadata lists the issuer https://auth.shop.localhost:PORT.
	IssuerListed IssuerMode = iota
	// IssuerNone404: the metadata answers 404 (no issuer).
	IssuerNone404
	// IssuerNoneEmpty: valid metadata with an empty authorization_servers (no issuer).
	IssuerNoneEmpty
	// IssuerError500: the metadata answers 500 (a failure, never "no issuer").
	IssuerError500
)

// AccessToken is a token the protected endpoints accept: one added by AddAccessToken, or one the
// authorization server issued (oauth.go), which also has a resource, maybe a DPoP binding, and
// an expiry (spec 4.5, 7).
type AccessToken struct {
	ClientID string
	Scopes   []string
	// Expires is when the token stops working (zero: never, for AddAccessToken tokens).
	Expires time.Time
}

// New builds a reference Company; Start serves it.
func New(opts Options) (*Server, error) {
	s := &Server{opts: opts, now: opts.Now, log: opts.Logger, faults: map[string]bool{}, hosts: map[string]http.Handler{}, stopped: make(chan struct{}),
		tokens: map[string]AccessToken{}, ended: map[string]bool{}, cacheCtl: "max-age=300", mainVer: "0.4", dpopNonce: randID(16)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.BurstCount <= 0 {
		s.opts.BurstCount = 2
	}
	if s.opts.RetryAfter <= 0 {
		s.opts.RetryAfter = 1
	}
	for _, f := range opts.Faults {
		if err := s.SetFault(f, true); err != nil {
			return nil, err
		}
	}
	s.ca = opts.CA
	if s.ca == nil {
		ca, err := NewCA(s.now())
		if err != nil {
			return nil, fmt.Errorf("refcompany: generating the dev CA: %w", err)
		}
		s.ca = ca
	}
	return s, nil
}

// Start listens and serves until Close or until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	addr := s.opts.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("refcompany: listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refcompany: listen address %q is not a loopback IP; the reference Company serves only on loopback", addr)
	}
	leaf, err := s.ca.Leaf(s.now(), ShopHost, "*."+ShopHost, AgentHost)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	raw, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("refcompany: listening on %s: %w", addr, err)
	}
	s.Port = raw.Addr().(*net.TCPAddr).Port
	s.Domain = ShopHost + ":" + strconv.Itoa(s.Port)
	s.ln = tls.NewListener(raw, &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12})
	own := s.ClientConfig()
	own.DevHosts = append(own.DevHosts, s.opts.AgentHosts...)
	own.DevRootCAs = append(own.DevRootCAs, s.opts.AgentRootCAs...)
	tr, err := transport.New(own)
	if err != nil {
		raw.Close()
		return err
	}
	s.client = tr
	if err := s.setupVerifier(); err != nil {
		raw.Close()
		return err
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second, ConnState: s.cn.state,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	go s.srv.Serve(s.ln)
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	return nil
}

// Close stops serving.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	if s.client != nil {
		s.client.Close()
	}
	s.closeOnce.Do(func() { close(s.stopped) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// CA returns the generated CA.
func (s *Server) CA() *CA { return s.ca }

// WriteCAFile writes the CA certificate (PEM) into dir and returns its path.
func (s *Server) WriteCAFile(dir string) (string, error) {
	p := filepath.Join(dir, "refcompany-ca.pem")
	return p, os.WriteFile(p, s.ca.PEM, 0o644)
}

// ClientConfig is the engine transport configuration that reaches this Company in dev mode: its
// host names map to 127.0.0.1 and its CA is trusted for them only.
func (s *Server) ClientConfig() transport.Config {
	return transport.Config{DevHosts: append([]string(nil), DevHosts...), DevRootCAs: []*x509.Certificate{s.ca.Cert}}
}

func (s *Server) authority(host string) string { return host + ":" + strconv.Itoa(s.Port) }

// URL returns https://HOST:PORT + path for one of the Company's hosts.
func (s *Server) URL(host, path string) string { return "https://" + s.authority(host) + path }

// Origin is https://shop.localhost:PORT.
func (s *Server) Origin() string { return s.URL(ShopHost, "") }

// Issuer is https://auth.shop.localhost:PORT.
func (s *Server) Issuer() string { return s.URL(AuthHost, "") }

// Identifier is the Company identifier the engine must find (spec 3.2) in the current issuer mode.
func (s *Server) Identifier() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issuer == IssuerListed {
		return s.Issuer()
	}
	return s.Origin()
}

// PoppyJSONURL is https://shop.localhost:PORT/.well-known/poppy.json.
func (s *Server) PoppyJSONURL() string { return s.URL(ShopHost, "/.well-known/poppy.json") }

// AddHost serves h for requests whose Host is host (any port), e.g. agent.localhost.
func (s *Server) AddHost(host string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[strings.ToLower(host)] = h
}

// SetIssuerMode changes the protected resource metadata at run time.
func (s *Server) SetIssuerMode(m IssuerMode) { s.mu.Lock(); s.issuer = m; s.mu.Unlock() }

// EditPoppyJSON installs a function that edits every poppy.json (and version document) before it
// is served; nil removes it. EditASMetadata and EditResourceMetadata do the same for the
// authorization server and protected resource metadata.
func (s *Server) EditPoppyJSON(f func(doc map[string]any)) {
	s.mu.Lock()
	s.editPoppy = f
	s.mu.Unlock()
}

// EditASMetadata: see EditPoppyJSON.
func (s *Server) EditASMetadata(f func(doc map[string]any)) { s.mu.Lock(); s.editAS = f; s.mu.Unlock() }

// EditResourceMetadata: see EditPoppyJSON.
func (s *Server) EditResourceMetadata(f func(doc map[string]any)) {
	s.mu.Lock()
	s.editPR = f
	s.mu.Unlock()
}

// SetCacheControl sets the Cache-Control of discovery documents (default "max-age=300").
func (s *Server) SetCacheControl(v string) { s.mu.Lock(); s.cacheCtl = v; s.mu.Unlock() }

// SetMainVersion sets poppy.json's protocol_version (default "0.4"). With "0.5", poppy.json
// lists 0.4 in supported_versions, so the engine must fetch the 0.4 document.
func (s *Server) SetMainVersion(v string) { s.mu.Lock(); s.mainVer = v; s.mu.Unlock() }

// AddAccessToken makes the protected endpoints accept token for clientID with scopes. A token
// the authorization server issued (it calls AddAccessToken too) expires accessTokenLifetime
// after it was issued; a token added by a test does not expire and works at every service.
func (s *Server) AddAccessToken(token, clientID string, scopes ...string) {
	var exp time.Time
	if _, issued := s.TokenResource(token); issued {
		exp = s.now().Add(accessTokenLifetime)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = AccessToken{ClientID: clientID, Scopes: scopes, Expires: exp}
}

// ExpireAccessTokens makes every access token known so far expire now, as if its lifetime had
// passed: the protected endpoints answer invalid_token for it (spec 7), and refresh gets a new
// one (spec 4.4).
func (s *Server) ExpireAccessTokens() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.tokens {
		t.Expires = now
		s.tokens[k] = t
	}
}

// apiMetadataPath is where the Orders API's own protected resource metadata is served after
// SetAPIResource(true) (RFC 9728 §3.1 for https://shop.localhost:PORT/api).
const apiMetadataPath = "/.well-known/oauth-protected-resource/api"

// APIResource is https://shop.localhost:PORT/api, the Orders API's own resource when
// SetAPIResource is on.
func (s *Server) APIResource() string { return s.URL(ShopHost, "/api") }

// SetAPIResource makes the Orders API (/api/...) a service that accepts only tokens issued for
// its own resource, APIResource (spec 4.5 "Tokens for one service"): its protected resource
// metadata names that resource, the issuer issues tokens for it, and a default token gets
// invalid_token with resource_metadata, as a Personal Agent with stale metadata would see after
// the change. Off by default (the API takes the default token).
func (s *Server) SetAPIResource(on bool) {
	if on {
		s.AllowResource(s.APIResource())
	}
	s.mu.Lock()
	s.apiOwnResource = on
	s.mu.Unlock()
}

func (s *Server) apiResourceOn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiOwnResource
}

// state builds the per-Server state of the authorization server, the Operations extension,
// the browser-session endpoint and the Company Agent.
func (s *Server) state() {
	s.stateOnce.Do(func() {
		s.authSt = newAuthServer()
		s.opSt = newOpStore(s)
		s.browserSt = newBrowserState()
		s.agentSt = newAgentStore(s)
	})
}

// authState is the authorization server's state (oauth.go).
func (s *Server) authState() *authServer { s.state(); return s.authSt }

// opState is the Orders API's and operations' state (ledger.go).
func (s *Server) opState() *opStore { s.state(); return s.opSt }

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.records...)
}

// RequestsTo returns the requests whose host (without port) and path match; "" matches any.
func (s *Server) RequestsTo(host, path string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		h, _, _ := net.SplitHostPort(r.Host)
		if (host == "" || strings.EqualFold(h, host)) && (path == "" || r.Path == path) {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() { s.mu.Lock(); s.records = nil; s.mu.Unlock() }

func (s *Server) record(r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.mu.Lock()
	s.records = append(s.records, Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, At: s.now()})
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	if s.hang(w, r) { // hostile.go
		return
	}
	if s.lenientServe(w, r) { // lenient.go
		return
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || port != strconv.Itoa(s.Port) {
		writeError(w, http.StatusMisdirectedRequest, "invalid_request", "the reference Company serves only Host names with port "+strconv.Itoa(s.Port))
		return
	}
	host = strings.ToLower(host)
	s.mu.Lock()
	extra := s.hosts[host]
	s.mu.Unlock()
	switch {
	case extra != nil:
		extra.ServeHTTP(w, r)
	case host == ShopHost && r.URL.Path == apiMetadataPath && s.apiResourceOn():
		// The Orders API's own protected resource metadata (spec 4.5, RFC 9728 §3.1).
		s.serveDoc(w, r, map[string]any{"resource": s.APIResource(), "authorization_servers": []any{s.Issuer()},
			"scopes_supported": []any{"orders:read", "orders:write"}, "bearer_methods_supported": []any{"header"}})
	case host == ShopHost:
		s.serveShop(w, r)
	case host == AuthHost:
		s.serveAuth(w, r)
	case host == WWWHost, host == OtherHost:
		s.serveWWW(w, r)
	default:
		http.NotFound(w, r)
	}
}

// Fault names (spec behaviours the reference Company can get wrong on purpose). Every fault of
// the reference Company is listed in Faults below; the constants of the authorization server's
// faults are in oauth.go, those of the Operations extension in ledger.go and those of task
// coverage in coverage.go, next to their logic.
const (
	FaultRedirectOtherPath      = "redirect-other-path"       // poppy.json redirects to another path (spec 3)
	FaultDomainMismatch         = "domain-mismatch"           // organization.domain is another host (spec 3, 3.1)
	FaultIssuerNotListingDomain = "issuer-not-listing-domain" // AS protected_resources lacks the domain (spec 3.2)
	FaultIssuerMismatch         = "issuer-mismatch"           // AS metadata issuer differs (spec 3.2)
	FaultVersionMismatch        = "version-mismatch"          // no compatible version (spec 3.4)
	FaultSessionEnded           = "session-ended"             // APIs end each new Session on its first request (spec 5.5)
	FaultVersionUnsupported     = "version-unsupported"       // APIs answer version_unsupported (spec 3.4)
	Fault429Burst               = "429-burst"                 // the next BurstCount API requests get 429 (spec 5.6)
	FaultRedirectProtected      = "redirect-protected"        // APIs answer a redirect (spec 3)
	// FaultResourceDPoPNonce: the protected endpoints (APIs, MCP server, protocol endpoints)
	// require a server-provided nonce in DPoP proofs and answer use_dpop_nonce with a DPoP-Nonce
	// header to a proof without it (RFC 9449 §9, spec 4.5).
	FaultResourceDPoPNonce = "resource-dpop-nonce"
)

// discoveryFaults break discovery and the Session destinations (spec 3, 3.4, 5.5, 5.6, 7).
var discoveryFaults = []string{FaultRedirectOtherPath, FaultDomainMismatch, FaultIssuerNotListingDomain, FaultIssuerMismatch,
	FaultVersionMismatch, FaultSessionEnded, FaultVersionUnsupported, Fault429Burst, FaultRedirectProtected, FaultResourceDPoPNonce}

// oauthFaults break the authorization server (spec 4; constants in oauth.go).
var oauthFaults = []string{FaultIssMissing, FaultIssWrong, FaultScopeWider, FaultDeviceForeignHost, FaultRefreshRotation,
	FaultRefreshNoRotation, FaultDPoPNonce, FaultDeviceSlowDown}

// operationFaults break the Operations extension v2 (constants in ledger.go).
var operationFaults = []string{FaultSummaryHostile, FaultTermsMismatch, FaultNewRevisionOnRetry, FaultInProgress503,
	FaultLoseResponse, FaultReusedRevision}

// Faults lists every fault name: SetFault, Options.Faults and `company serve` accept these.
var Faults = slices.Concat(discoveryFaults, oauthFaults, operationFaults, JoinFaults, pageFaults, coverageFaults, hostileFaults, lenientFaults, unkeptFaults)

// SetFault switches a fault on or off (also at run time).
func (s *Server) SetFault(name string, on bool) error {
	known := false
	for _, f := range Faults {
		known = known || f == name
	}
	if !known {
		return fmt.Errorf("refcompany: unknown fault %q; known faults: %s", name, strings.Join(Faults, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[name] = on
	if name == Fault429Burst {
		s.burstLeft = 0
		if on {
			s.burstLeft = s.opts.BurstCount
		}
	}
	return nil
}

// ActiveFaults lists the faults switched on.
func (s *Server) ActiveFaults() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for f, on := range s.faults {
		if on {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) fault(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults[name]
}

// take429 consumes one 429 of the burst.
func (s *Server) take429() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faults[Fault429Burst] || s.burstLeft <= 0 {
		return false
	}
	s.burstLeft--
	return true
}

var consentRequestRE = regexp.MustCompile(`name="request" value="([^"]+)"`)

// ApproveSignIn plays the User's browser in a Direct Sign-In (spec 4.2) for tests and the demo:
// it opens authURL (the authorization URL a Personal Agent made) on this Company, approves scopes
// on the consent page as account, and follows the redirect back to the Personal Agent's loopback
// redirect URI, which must be http://127.0.0.1 or http://[::1] (RFC 8252 §7.3). Nothing else is
// contacted. It returns an error naming the step that failed.
func (s *Server) ApproveSignIn(ctx context.Context, authURL, account string, scopes []string) error {
	if s.client == nil {
		return fmt.Errorf("refcompany: start the Server before ApproveSignIn")
	}
	hc := s.client.NoRedirectClient()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return fmt.Errorf("refcompany: the authorization URL: %w", err)
	}
	if !strings.HasPrefix(authURL, s.Issuer()+"/") {
		return fmt.Errorf("refcompany: %q is not an authorization URL of this Company's issuer %s", authURL, s.Issuer())
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("refcompany: opening the consent page: %w", err)
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	m := consentRequestRE.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		return fmt.Errorf("refcompany: the consent page answered HTTP %d without a sign-in request: %.300s", resp.StatusCode, page)
	}
	form := url.Values{"request": {string(m[1])}, "decision": {"approve"}, "account": {account}, "scope": scopes}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.Issuer()+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = hc.Do(req)
	if err != nil {
		return fmt.Errorf("refcompany: answering the consent page: %w", err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		return fmt.Errorf("refcompany: the consent answer was HTTP %d, not a redirect back (303)", resp.StatusCode)
	}
	if ip := net.ParseIP(back.Hostname()); back.Scheme != "http" || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refcompany: the redirect back goes to %s, not a loopback redirect URI", back.Redacted())
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, back.String(), nil)
	lt := &http.Transport{} // no proxy: the loopback listener of the Personal Agent itself
	defer lt.CloseIdleConnections()
	resp, err = (&http.Client{Transport: lt, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("refcompany: following the redirect back to the Personal Agent: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}
