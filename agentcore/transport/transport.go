package transport

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// ErrNotHTTPS is matched (errors.Is) by every *SchemeError.
var ErrNotHTTPS = errors.New("transport: not an HTTPS URL")

// SchemeError reports a Company-given URL that is not HTTPS (spec 3 "HTTPS").
type SchemeError struct{ URL string }

func (e *SchemeError) Error() string {
	return fmt.Sprintf("refused %q: spec 3 requires every URL a Company gives to be an HTTPS URL; the Company must publish it as https://", e.URL)
}

// Is makes errors.Is(err, ErrNotHTTPS) true.
func (e *SchemeError) Is(target error) bool { return target == ErrNotHTTPS }

// Config configures a Transport. The zero value is the production policy: HTTPS only, public
// addresses only, system roots.
type Config struct {
	// DevHosts are the host names (without port) that dev mode maps to 127.0.0.1, for the reference
	// Company (see devmode notes). An entry "*.localhost" matches every subdomain of localhost.
	// Only these names may reach loopback.
	DevHosts []string
	// DevRootCAs are CA certificates trusted only for DevHosts (never for other hosts).
	DevRootCAs []*x509.Certificate
	// RootCAs replaces the system roots for non-dev hosts (nil: system roots).
	RootCAs *x509.CertPool
	// AllowNonPublicAddresses turns the address policy off for every host: "configured on
	// purpose" (spec 3), e.g. for a Company on a private network. Off by default.
	AllowNonPublicAddresses bool
	// LookupNetIP resolves host names (nil: net.DefaultResolver). Tests inject it.
	LookupNetIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Observer, when set, receives every exchange with secrets redacted.
	Observer func(Exchange)
	// Inspect, when set with Observer, sees each exchange once before redaction: the request
	// as sent, its body, and the response's header and the part of its body that was read. What
	// it returns travels in Exchange.Inspected. It must show nothing secret: agentcore/inspect's
	// Decode keeps decoded claims without signatures or token values, and its Defer keeps the raw
	// material in memory for a later decode, printing and logging as nothing but its name.
	Inspect func(ctx context.Context, req *http.Request, reqBody []byte, respHeader http.Header, respBody []byte) any
	// Logger receives debug lines about exchanges (secrets redacted). Nil: slog.Default().
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends (nil: a timer). Tests inject it to observe 429 waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxRetryAfter caps how long the engine waits on a 429 before giving up (default 60s).
	MaxRetryAfter time.Duration
	// Max429Retries bounds how many times one request is re-sent after 429 (default 3).
	Max429Retries int
	// Timeout bounds each exchange of a SessionClient (default 30s).
	Timeout time.Duration
	// DocumentTimeout bounds each request of DiscoveryClient and NoRedirectClient, redirects
	// and body included (default 10s): discovery documents, metadata, descriptions, JWKS and
	// OAuth endpoints. A Company that doesn't answer in time gets a *TimeoutError naming the URL.
	DocumentTimeout time.Duration
}

// DefaultDocumentTimeout is Config.DocumentTimeout's default.
const DefaultDocumentTimeout = 10 * time.Second

// ErrTimeout is matched (errors.Is) by every *TimeoutError.
var ErrTimeout = errors.New("transport: the Company did not answer in time")

// TimeoutError reports a request that got no complete answer before its deadline: the
// Company's server is slow or stuck (or the caller gave up sooner). Nothing of the answer was
// used.
type TimeoutError struct {
	URL   string        // redacted
	Limit time.Duration // the longest Poppydesk waits for such a request
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s did not answer in time (Poppydesk waits at most %s for it); the Company's server is slow or not answering, nothing from it was used; try again later", e.URL, e.Limit)
}

// Is makes errors.Is(err, ErrTimeout) and errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// Timeout reports true, as net.Error does for timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// deadlineWords turns the end of a request's deadline into a *TimeoutError naming its URL, for
// the document clients. Their http.Client.Timeout (the limit plus documentBackstop) bounds the
// whole request, redirects included, through the request's context deadline; deadlineWords ends
// a request documentBackstop before that deadline, at the limit, so the error the caller gets
// is its own, typed and in words: were the http.Client's timer to fire first, it would flatten
// the error into a string ("Client.Timeout exceeded"), and a second's margin keeps it from
// firing first however loaded the machine is.
// documentBackstop is how long after the document limit the http.Client's own timeout fires.
const documentBackstop = time.Second

type deadlineWords struct {
	rt    http.RoundTripper
	limit time.Duration
}

func (d *deadlineWords) RoundTrip(req *http.Request) (*http.Response, error) {
	outer := req.Context()
	dl, ok := outer.Deadline()
	if !ok {
		return d.rt.RoundTrip(req)
	}
	// The http.Client's deadline is documentBackstop after the limit; a caller's own earlier
	// deadline (or a later hop of redirects) keeps a small margin instead.
	margin := min(50*time.Millisecond, d.limit/10)
	if time.Until(dl) > d.limit {
		margin = documentBackstop
	}
	ctx, cancel := context.WithDeadline(outer, dl.Add(-margin))
	resp, err := d.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			return nil, &TimeoutError{URL: redact.URL(req.URL), Limit: d.limit}
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, ctx: ctx, cancel: cancel, url: req.URL, limit: d.limit}
	return resp, nil
}

// Exchange is one HTTP exchange as the observer sees it. Header values and bodies are redacted.
type Exchange struct {
	Method         string
	URL            string // redacted (secret query parameters masked)
	Status         int    // 0 when no response arrived
	Duration       time.Duration
	RequestHeader  http.Header
	ResponseHeader http.Header
	// RequestBody and ResponseBody hold what was sent and read of the bodies (up to 64 KiB,
	// JSON token fields and JWT-shaped values redacted). The exchange is reported when the
	// response body is closed.
	RequestBody  []byte
	ResponseBody []byte
	Err          string
	// Inspected is what Config.Inspect returned for this exchange (nil without it).
	Inspected any
}

// Transport is the engine's safe HTTP transport: one connection pool for every Company, with the
// address policy enforced at connection time. Build it once and share it.
type Transport struct {
	cfg    Config
	policy *hostPolicy
	rt     *http.Transport
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	log    *slog.Logger
	guard  *guard
	// noRedirect and followHTTPS are the document clients (Config.DocumentTimeout), reused: no
	// per-request allocation. SessionClient sends through guard itself, bounded by its request's
	// context (Config.Timeout).
	noRedirect  *http.Client
	followHTTPS *http.Client
}

// New builds a Transport.
func New(cfg Config) (*Transport, error) {
	p := &hostPolicy{devExact: map[string]bool{}, allowAll: cfg.AllowNonPublicAddresses}
	for _, h := range cfg.DevHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case h == "" || h == "*" || h == "*.":
			return nil, fmt.Errorf("transport: dev host %q is not a host name or *.suffix pattern", h)
		case strings.HasPrefix(h, "*."):
			p.devSuffixes = append(p.devSuffixes, h[1:])
		default:
			p.devExact[h] = true
		}
	}
	p.lookup = cfg.LookupNetIP
	if p.lookup == nil {
		p.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	p.dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, ControlContext: p.control}
	var devRoots *x509.CertPool
	if len(cfg.DevRootCAs) > 0 {
		devRoots = x509.NewCertPool()
		for _, c := range cfg.DevRootCAs {
			devRoots.AddCert(c)
		}
	}
	roots := cfg.RootCAs
	t := &Transport{cfg: cfg, policy: p, now: cfg.Now, sleep: cfg.Sleep, log: cfg.Logger}
	if t.now == nil {
		t.now = time.Now
	}
	if t.sleep == nil {
		t.sleep = SleepContext
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.cfg.MaxRetryAfter <= 0 {
		t.cfg.MaxRetryAfter = 60 * time.Second
	}
	if t.cfg.Max429Retries <= 0 {
		t.cfg.Max429Retries = 3
	}
	if t.cfg.Timeout <= 0 {
		t.cfg.Timeout = 30 * time.Second
	}
	if t.cfg.DocumentTimeout <= 0 {
		t.cfg.DocumentTimeout = DefaultDocumentTimeout
	}
	t.rt = &http.Transport{
		Proxy:       nil, // never an environment proxy: it would bypass the address policy
		DialContext: p.dial,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return p.dialTLS(ctx, network, addr, roots, devRoots)
		},
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// No ResponseHeaderTimeout: every client bounds its own requests (the document clients
		// with http.Client.Timeout, SessionClient with its request's context, agentcore/apis
		// with a wait for the headers of its own), so a signed request pays for one timer.
		ExpectContinueTimeout: time.Second,
	}
	t.guard = &guard{t: t}
	docs := &deadlineWords{rt: t.guard, limit: t.cfg.DocumentTimeout}
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t.noRedirect = &http.Client{Transport: docs, Timeout: t.cfg.DocumentTimeout + documentBackstop, CheckRedirect: noFollow}
	t.followHTTPS = &http.Client{Transport: docs, Timeout: t.cfg.DocumentTimeout + documentBackstop, CheckRedirect: checkDiscoveryRedirect}
	return t, nil
}

// RoundTripper is the guard under every client (HTTPS only, the address policy, observed):
// for layers that sign requests themselves (agentcore/apis). It follows no redirect and has no
// timeout of its own: the caller bounds each exchange (Timeout).
func (t *Transport) RoundTripper() http.RoundTripper { return t.guard }

// Timeout is Config.Timeout: how long a signed exchange may take (SessionClient), or wait for
// its response headers (agentcore/apis, whose MCP answers may stream for longer).
func (t *Transport) Timeout() time.Duration { return t.cfg.Timeout }

// Close drops idle connections.
func (t *Transport) Close() { t.rt.CloseIdleConnections() }

// IsDevHost reports whether host (no port) is one of the configured dev host names.
func (t *Transport) IsDevHost(host string) bool { return t.policy.isDevHost(host) }

// Now is the Transport's clock.
func (t *Transport) Now() time.Time { return t.now() }

// Sleep waits as configured (used by packages that honour Retry-After themselves).
func (t *Transport) Sleep(ctx context.Context, d time.Duration) error { return t.sleep(ctx, d) }

// DiscoveryClient returns the client for credential-free discovery requests (spec 3 "Fetching
// the document"): it follows up to 10 redirects, each only to an HTTPS URL, and sends no
// credentials (it never signs, and the caller must not add Authorization or Poppy-Session).
// Each request, redirects and body included, ends within Config.DocumentTimeout.
func (t *Transport) DiscoveryClient() *http.Client { return t.followHTTPS }

// NoRedirectClient returns a client that never follows redirects: a 3xx is returned as is. Use it
// for documents fetched without redirects (spec 3.4 supported_versions) and for every request
// carrying credentials (spec 3 "Redirects and addresses"), such as those to OAuth endpoints.
// Each request, body included, ends within Config.DocumentTimeout.
func (t *Transport) NoRedirectClient() *http.Client { return t.noRedirect }

// ErrRedirectNotHTTPS is returned when a discovery redirect points to a non-HTTPS URL.
var ErrRedirectNotHTTPS = errors.New("discovery redirect to a non-HTTPS URL")

func checkDiscoveryRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("stopped after 10 redirects (spec 3: the well-known URL may redirect, but not endlessly)")
	}
	if req.URL.Scheme != "https" {
		return fmt.Errorf("%w: %s (spec 3: every redirect must be to an HTTPS URL)", ErrRedirectNotHTTPS, redact.URL(req.URL))
	}
	for _, h := range []string{"Authorization", "Poppy-Session", "Dpop", "Cookie", "Proxy-Authorization"} {
		req.Header.Del(h)
	}
	return nil
}

// guard is the RoundTripper under every engine client: HTTPS only, observed, logged.
type guard struct{ t *Transport }

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if g.t.cfg.Observer != nil && req.GetBody != nil && req.ContentLength > 0 && req.ContentLength <= maxObservedBody {
		if b, err := req.GetBody(); err == nil {
			body, _ = io.ReadAll(b)
			b.Close()
		}
	}
	return g.roundTrip(req, body)
}

// roundTrip sends req; reqBody is its body as the observer sees it (the signed-request pipeline
// gives it directly, since its requests have no GetBody that net/http could replay them with).
func (g *guard) roundTrip(req *http.Request, reqBody []byte) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &SchemeError{URL: redact.URL(req.URL)}
	}
	obs := g.t.cfg.Observer
	if obs == nil && !g.t.log.Enabled(req.Context(), slog.LevelDebug) {
		return g.t.rt.RoundTrip(req)
	}
	start := g.t.now()
	ex := Exchange{Method: req.Method, URL: redact.URL(req.URL), RequestHeader: redact.Header(req.Header)}
	var rawBody []byte
	if obs != nil && len(reqBody) > 0 && len(reqBody) <= maxObservedBody {
		rawBody = reqBody
		ex.RequestBody = redact.JSON(rawBody)
	}
	inspect := func(respHeader http.Header, respBody []byte) {
		if g.t.cfg.Inspect != nil && obs != nil {
			ex.Inspected = g.t.cfg.Inspect(req.Context(), req, rawBody, respHeader, respBody)
		}
	}
	resp, err := g.t.rt.RoundTrip(req)
	if err != nil {
		ex.Duration = g.t.now().Sub(start)
		ex.Err = redact.String(err.Error())
		inspect(nil, nil)
		g.emit(req.Context(), ex)
		return nil, err
	}
	ex.Status = resp.StatusCode
	ex.ResponseHeader = redact.Header(resp.Header)
	// The exchange is reported when the body is closed, with what was read of it (redacted).
	resp.Body = &observedBody{rc: resp.Body, g: g, ctx: req.Context(), ex: ex, start: start,
		inspect: func(ex *Exchange, body []byte) {
			if g.t.cfg.Inspect != nil && obs != nil {
				ex.Inspected = g.t.cfg.Inspect(req.Context(), req, rawBody, resp.Header, body)
			}
		}}
	return resp, nil
}

// maxObservedBody bounds the bytes of a body kept for the observer.
const maxObservedBody = 64 << 10

func (g *guard) emit(ctx context.Context, ex Exchange) {
	g.t.log.DebugContext(ctx, "poppy exchange", "method", ex.Method, "url", ex.URL, "status", ex.Status, "duration", ex.Duration, "error", ex.Err)
	if g.t.cfg.Observer != nil {
		g.t.cfg.Observer(ex)
	}
}

type observedBody struct {
	rc    io.ReadCloser
	g     *guard
	ctx   context.Context
	ex    Exchange
	start time.Time
	buf   []byte
	done  bool
	// inspect runs Config.Inspect on the raw body read before it is redacted.
	inspect func(ex *Exchange, body []byte)
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if room := maxObservedBody - len(b.buf); room > 0 && n > 0 {
		b.buf = append(b.buf, p[:min(n, room)]...)
	}
	return n, err
}

func (b *observedBody) Close() error {
	err := b.rc.Close()
	if !b.done {
		b.done = true
		b.ex.Duration = b.g.t.now().Sub(b.start)
		b.inspect(&b.ex, b.buf)
		if len(b.buf) > 0 {
			b.ex.ResponseBody = redact.JSON(b.buf)
		}
		b.g.emit(b.ctx, b.ex)
	}
	return err
}

// CheckURL parses a Company-given URL and checks it is an absolute HTTPS URL without userinfo
// (spec 3 "HTTPS") whose path has no dot-segment and no encoded slash or backslash (*PathError,
// see CheckPath): every Session request and every other Company URL goes through it.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return nil, &SchemeError{URL: raw}
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q carries user information; Company URLs must not", raw)
	}
	if err := CheckPath(u); err != nil {
		return nil, err
	}
	return u, nil
}

// SleepContext waits d, or until ctx ends and then returns its error: the one context-aware
// wait of the engine. The transport's 429 waits, the approval queue's backoff and polls, the
// conversation manager's waits and poppydesk check's waits use it unless a test injects a clock
// of its own.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
