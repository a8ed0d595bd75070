package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// Signer adds the Session header (and whatever else the Session signs) to a request. The
// agentcore/session Session implements it. accessToken is "" for a signed-out request.
type Signer interface {
	SignRequest(ctx context.Context, req *http.Request, accessToken string) error
}

// SignerFunc adapts a function to Signer.
type SignerFunc func(ctx context.Context, req *http.Request, accessToken string) error

// SignRequest calls f.
func (f SignerFunc) SignRequest(ctx context.Context, req *http.Request, accessToken string) error {
	return f(ctx, req, accessToken)
}

// Hooks let later layers react to the errors of spec 7. Each is optional.
type Hooks struct {
	// Refresh is called once on invalid_token with the rejected token and returns a new access
	// token (spec 4.4). When it is nil or fails, the request is sent once more signed out
	// (spec 5.5 "continues signed out"), and Response.SignedOut is set.
	Refresh func(ctx context.Context, rejected string) (string, error)
	// RenewSession is called once on session_ended and returns the Signer of a new Session with
	// a new sid (spec 5.5). The request is then sent again, once. Nil: the error is returned.
	RenewSession func(ctx context.Context) (Signer, error)
	// Rediscover is called once on version_unsupported. It fetches poppy.json again without any
	// cache and chooses a version again (spec 3.4). If the chosen version differs from the one in
	// use, it returns the new version (and extensions) with the Signer of a new Session, and the
	// request is sent again, once. Nil: the error is returned.
	Rediscover func(ctx context.Context) (Rediscovery, error)
	// Authorize, when set, puts the access token on a signed-in attempt instead of
	// "Authorization: Bearer token": the sign-in layer sets "Bearer", or "DPoP" and a DPoP proof
	// for this method and URL with ath, for a DPoP-bound token (spec 4.5, RFC 9449 §7;
	// agentcore/oauth's Client.Authorize). It is called for every attempt (each proof is used
	// once), after Poppy-Version is set and before the Signer signs, with the Authorization and
	// DPoP headers removed. A signed-out attempt carries neither header and doesn't call it.
	Authorize func(ctx context.Context, req *http.Request, token string) error
	// OnResponse, when set, sees every response before it is handled, e.g. to keep a DPoP-Nonce
	// the resource sent for the next proof (RFC 9449 §9; oauth's Client.NoteNonce). It must not
	// read the body.
	OnResponse func(ctx context.Context, resp *http.Response)
}

// CodeUseDPoPNonce is the RFC 9449 §9 error of a resource that wants a nonce in DPoP proofs: a
// signed-in request that gets it with a DPoP-Nonce header is sent again once, so the Authorize
// hook can put the nonce in the new proof.
const CodeUseDPoPNonce = "use_dpop_nonce"

// Rediscovery is what Hooks.Rediscover found.
type Rediscovery struct {
	Version    string // the newly chosen protocol version ("major.minor")
	Extensions string // the Poppy-Extensions value for the new Session ("" for none)
	Signer     Signer // the new Session's signer (required when Version changed)
}

// SessionConfig configures a SessionClient: one Session at one Company.
type SessionConfig struct {
	Signer       Signer
	Destinations *Destinations
	Version      string // Poppy-Version, e.g. "0.4" (spec 3.4)
	Extensions   string // Poppy-Extensions value, e.g. `"operations";v="2"` ("" for none)
	Hooks        Hooks
}

// SessionClient sends signed requests for one Session to one Company's Session destinations
// (spec 5.2, 5.6, 7). It never follows redirects (spec 3). Safe for concurrent use.
type SessionClient struct {
	t     *Transport
	dest  *Destinations
	hooks Hooks

	mu      sync.Mutex
	signer  Signer
	version string
	exts    string
	values  map[string][]string // headerValue's slices, by value
}

// headerValue returns a shared one-element header value slice for v.
func (c *SessionClient) headerValue(v string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	hv, ok := c.values[v]
	if !ok {
		if c.values == nil || len(c.values) > 16 {
			c.values = map[string][]string{}
		}
		hv = []string{v}
		c.values[v] = hv
	}
	return hv
}

// Session returns a SessionClient over t.
func (t *Transport) Session(cfg SessionConfig) (*SessionClient, error) {
	if cfg.Signer == nil {
		return nil, errors.New("transport: a SessionClient needs a Signer (every request to a Session destination carries the Session header, spec 5.2)")
	}
	if cfg.Version == "" {
		return nil, errors.New("transport: a SessionClient needs the chosen protocol version for Poppy-Version (spec 3.4)")
	}
	return &SessionClient{t: t, dest: cfg.Destinations, hooks: cfg.Hooks, signer: cfg.Signer, version: cfg.Version, exts: cfg.Extensions}, nil
}

// Request is one request to a Session destination. Body is kept so the request can be re-sent.
type Request struct {
	Method      string
	URL         string
	Header      http.Header // extra headers (Content-Type, Idempotency-Key, ...)
	Body        []byte
	AccessToken string // "" for a signed-out request
}

// Response is a successful (non-error, non-redirect) response. The caller closes Body.
type Response struct {
	*http.Response
	// AccessToken is the token the last attempt used ("" when it went signed out).
	AccessToken string
	// SignedOut is true when the engine dropped a rejected access token and continued signed out.
	SignedOut bool
	// Renewed is true when the request succeeded in a new Session (session_ended or
	// version_unsupported handling); later requests of this client use that Session too.
	Renewed bool
	// SignedOutReason is why the request continued signed out (SignedOut): the error of
	// Hooks.Refresh, such as a refresh token the Company no longer accepts (spec 5.5); nil when
	// no refresh was tried. Layers above may set it too.
	SignedOutReason error
}

// Do sends req, signed, and applies the error handling of spec 5.5, 5.6, 3.4 and 7. Every error
// status becomes a *ProtocolError; a redirect becomes a *RedirectError; a URL outside the
// Session destinations becomes a *DestinationError before anything is sent.
func (c *SessionClient) Do(ctx context.Context, req *Request) (*Response, error) {
	u, err := CheckURL(req.URL)
	if err != nil {
		return nil, err
	}
	if !c.dest.allowsChecked(u) {
		return nil, &DestinationError{URL: redact.URL(u)}
	}
	if u.RawQuery != "" && u.Query().Has("access_token") {
		return nil, errors.New("transport: refused a URL with access_token in its query: spec 5.6 forbids tokens in URLs")
	}
	token := req.AccessToken
	var (
		refreshed, droppedToken, renewed, rediscovered, nonceRetried bool
		n429                                                         int
		signedOutReason                                              error
	)
	for {
		c.mu.Lock()
		signer, version, exts := c.signer, c.version, c.exts
		c.mu.Unlock()
		resp, err := c.send(ctx, u, req, token, signer, version, exts)
		if err != nil {
			return nil, err
		}
		if c.hooks.OnResponse != nil {
			c.hooks.OnResponse(ctx, resp)
		}
		if resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified {
			return &Response{Response: resp, AccessToken: token, SignedOut: droppedToken, Renewed: renewed || rediscovered, SignedOutReason: signedOutReason}, nil
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc := resp.Header.Get("Location")
			drain(resp)
			return nil, &RedirectError{Method: req.Method, URL: redact.URL(u), Status: resp.StatusCode, Location: loc}
		}
		pe := parseErrorResponse(req.Method, redact.URL(u), resp, c.t.now())
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			wait := pe.RetryAfter
			if _, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), c.t.now()); !ok {
				wait = time.Second // no usable Retry-After: still back off
			}
			if n429 >= c.t.cfg.Max429Retries {
				pe.Note = fmt.Sprintf("gave up after %d rate-limited attempts", n429+1)
				return nil, pe
			}
			if wait > c.t.cfg.MaxRetryAfter {
				pe.Note = fmt.Sprintf("Retry-After exceeds the engine's limit of %s; not waiting", c.t.cfg.MaxRetryAfter)
				return nil, pe
			}
			n429++
			if err := c.t.sleep(ctx, wait); err != nil {
				pe.Note = "stopped waiting: " + err.Error()
				return nil, pe
			}
			continue
		case pe.Code == CodeUseDPoPNonce && token != "" && !nonceRetried && resp.Header.Get("DPoP-Nonce") != "":
			nonceRetried = true // RFC 9449 §9: once, with the nonce in the new proof
			continue
		case pe.Code == CodeInvalidToken && token != "" && !refreshed:
			refreshed = true
			if c.hooks.Refresh != nil {
				nt, err := c.hooks.Refresh(ctx, token)
				if err == nil && nt != "" {
					token = nt
					continue
				}
				signedOutReason = err
			}
			token, droppedToken = "", true // continue signed out (spec 5.5)
			continue
		case pe.Code == CodeSessionEnded:
			if renewed || c.hooks.RenewSession == nil {
				if renewed {
					pe.Note = "the new Session was ended too, so the request was not sent again (spec 5.5)"
				}
				return nil, pe
			}
			renewed = true
			ns, err := c.hooks.RenewSession(ctx)
			if err != nil || ns == nil {
				pe.Note = fmt.Sprintf("starting a new Session failed: %v", err)
				return nil, pe
			}
			c.mu.Lock()
			c.signer = ns
			c.mu.Unlock()
			continue
		case pe.Code == CodeVersionUnsupported:
			if rediscovered || c.hooks.Rediscover == nil {
				if rediscovered {
					pe.Note = "the Company refused the newly chosen version too (spec 3.4)"
				}
				return nil, pe
			}
			rediscovered = true
			rd, err := c.hooks.Rediscover(ctx)
			if err != nil {
				pe.Note = fmt.Sprintf("fetching poppy.json again failed: %v", err)
				return nil, pe
			}
			if rd.Version == version || rd.Signer == nil {
				pe.Note = fmt.Sprintf("poppy.json fetched again still chooses version %s, so the request was not sent again (spec 3.4)", version)
				return nil, pe
			}
			c.mu.Lock()
			c.signer, c.version, c.exts = rd.Signer, rd.Version, rd.Extensions
			c.mu.Unlock()
			continue
		default:
			// invalid_session, insufficient_scope, 401 challenges, extension_required and the
			// errors of 8.13 are returned to the caller as typed errors.
			return nil, pe
		}
	}
}

func (c *SessionClient) send(ctx context.Context, u *url.URL, req *Request, token string, signer Signer, version, exts string) (*http.Response, error) {
	// The request is built from the URL Do parsed and checked (no second parse). Its context
	// bounds the whole exchange, body included, by Config.Timeout; closing the body ends it.
	ctx, cancel := context.WithTimeout(ctx, c.t.cfg.Timeout)
	hr := (&http.Request{Method: req.Method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, len(req.Header)+4), Host: u.Host}).WithContext(ctx)
	if hr.Method == "" {
		hr.Method = http.MethodGet
	}
	if req.Body != nil {
		hr.Body, hr.ContentLength = io.NopCloser(bytes.NewReader(req.Body)), int64(len(req.Body))
		if len(req.Body) == 0 {
			hr.Body = http.NoBody
		}
	}
	// No automatic replay by net/http with the same single-use Session JWT (spec 5.2): GetBody
	// stays nil, so this client decides retries, each freshly signed.
	for k, vs := range req.Header {
		hr.Header[k] = vs
	}
	// One-element slices made once per value: net/http only reads them, and a signer replaces
	// them rather than changing them.
	hr.Header["Poppy-Version"] = c.headerValue(version)
	if exts != "" {
		hr.Header["Poppy-Extensions"] = c.headerValue(exts)
	} else {
		delete(hr.Header, "Poppy-Extensions")
	}
	hr.Header.Del("Authorization")
	hr.Header.Del("DPoP")
	switch {
	case token != "" && c.hooks.Authorize != nil:
		if err := c.hooks.Authorize(ctx, hr, token); err != nil {
			cancel()
			return nil, fmt.Errorf("transport: putting the access token on %s %s failed: %w", req.Method, redact.URL(u), err)
		}
	case token != "":
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	if err := signer.SignRequest(ctx, hr, token); err != nil {
		cancel()
		return nil, fmt.Errorf("transport: signing the Session header failed: %w", err)
	}
	// The guard directly, not an http.Client: this client follows no redirect (a 3xx is
	// returned to Do) and has its own deadline, so the Client's redirect machinery and header
	// copies would only cost time on every signed request.
	resp, err := c.t.guard.RoundTrip(hr)
	if err != nil {
		cancel()
		return nil, &url.Error{Op: urlOp(hr.Method), URL: redact.URL(u), Err: err}
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, ctx: ctx, cancel: cancel, url: u, limit: c.t.cfg.Timeout}
	return resp, nil
}

// urlOp is the Op of a *url.Error for method, as net/http.Client writes it ("Get", "Post").
func urlOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// cancelBody ends a request's context when its response body is closed, and reports a body cut
// by the end of the exchange's deadline as a *TimeoutError: net/http may report such a cut as
// io.EOF, which would pass a truncated body for a complete one.
type cancelBody struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
	url    *url.URL
	limit  time.Duration
}

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ctx.Err() != nil {
		if errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
			return n, &TimeoutError{URL: redact.URL(b.url), Limit: b.limit}
		}
		return n, b.ctx.Err()
	}
	return n, err
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}
