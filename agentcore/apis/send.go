package apis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Limits.
const (
	maxBody        = 4 << 20 // bytes of a response body kept
	max429Retries  = 3
	maxRetryAfter  = 60 * time.Second
	headerApproval = "Poppy-Approval"
	headerIdemKey  = "Idempotency-Key"
)

// Config configures a Client: one Session at one Company.
type Config struct {
	// Transport is the engine's safe transport (required).
	Transport *transport.Transport
	// Signer signs every request with the Session header (required; agentcore/session's Session).
	Signer transport.Signer
	// Destinations are the Company's Session destinations (required; spec 5.2), such as
	// discovery.Company.SessionDestinations.
	Destinations *transport.Destinations
	// Described holds the Session destinations of the OpenAPI descriptions read this run
	// (NewDescribed; share one per Company). Nil: this Client keeps its own, filled by
	// FetchOpenAPI only.
	Described *Described
	// Version is Poppy-Version (required, spec 3.4) and Extensions the Poppy-Extensions value
	// ("" for none), set before the Signer, whose values win.
	Version    string
	Extensions string
	// Refresh is called once on invalid_token with the rejected token and returns a new one
	// (spec 4.4). Nil: the error is returned.
	Refresh func(ctx context.Context, rejected string) (string, error)
	// AccessToken, when set, gives the access token for a request to rawURL (spec 4.5: the
	// token of the service it belongs to; "" when signed out). Send uses it when
	// Request.AccessToken is empty, and an MCP connection made with a nil TokenFunc calls it with
	// the MCP server's url (spec 7). agentcore/engine provides it for a signed-in Client.
	AccessToken func(ctx context.Context, rawURL string) (string, error)
	// Authorize, when set, puts the access token on each attempt instead of
	// "Authorization: Bearer token" (spec 4.5): "DPoP" and a fresh DPoP proof for a DPoP-bound
	// token (RFC 9449 §7), as transport.Hooks.Authorize. Called with Authorization and DPoP
	// removed, before the Signer.
	Authorize func(ctx context.Context, req *http.Request, token string) error
	// OnResponse, when set, sees every response before it is handled (a DPoP-Nonce to keep,
	// RFC 9449 §9), as transport.Hooks.OnResponse. It must not read the body.
	OnResponse func(ctx context.Context, resp *http.Response)
	// Descriptions, when set, is the shared cache FetchOpenAPI reads OpenAPI descriptions through
	// (the engine's: one per engine). Nil: FetchOpenAPI fetches and parses on every call.
	Descriptions *Descriptions
	// Now is the clock (nil: the Transport's).
	Now func() time.Time
	// Logger (nil: slog.Default()). Secrets are never logged.
	Logger *slog.Logger
}

// Client calls one Company's APIs in one Session. Safe for concurrent use.
type Client struct {
	cfg       Config
	described *Described
	base      http.RoundTripper
	now       func() time.Time
	log       *slog.Logger
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	switch {
	case cfg.Transport == nil:
		return nil, errors.New("apis: Config.Transport is required (the engine's safe transport)")
	case cfg.Signer == nil:
		return nil, errors.New("apis: Config.Signer is required: every API request carries the Session header (spec 5.2)")
	case cfg.Destinations == nil:
		return nil, errors.New("apis: Config.Destinations is required: the Session JWT goes only to the Company's Session destinations (spec 5.2)")
	case cfg.Version == "":
		return nil, errors.New("apis: Config.Version is required for Poppy-Version (spec 3.4)")
	}
	c := &Client{cfg: cfg, described: cfg.Described, base: cfg.Transport.RoundTripper(), now: cfg.Now, log: cfg.Logger}
	if c.described == nil {
		c.described = NewDescribed(nil)
	}
	if c.now == nil {
		c.now = cfg.Transport.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c, nil
}

// Request is one API request. Keep it to send the same request again (Again).
type Request struct {
	Method string
	URL    string
	Header http.Header // Content-Type, Idempotency-Key, Poppy-Approval, ...
	Body   []byte
	// AccessToken is sent as a Bearer token ("" for a signed-out request). It is never logged.
	AccessToken string
	// NoIdempotencyKey sends an unsafe request without Idempotency-Key (Send adds a random one
	// otherwise). Again(extra, false) sets it.
	NoIdempotencyKey bool
}

// Unsafe reports whether the method is one that gets an Idempotency-Key.
func Unsafe(method string) bool {
	switch strings.ToUpper(method) {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Again returns the same request (method, URL, body, token) with extra headers set, such as
// Poppy-Approval, and the Idempotency-Key replaced by a new random key (newKey) or removed
// (Operations 6: the first request's key doesn't carry over).
func (r *Request) Again(extra http.Header, newKey bool) *Request {
	n := &Request{Method: r.Method, URL: r.URL, Header: r.Header.Clone(), Body: bytes.Clone(r.Body), AccessToken: r.AccessToken}
	if n.Header == nil {
		n.Header = http.Header{}
	}
	for k, vs := range extra {
		n.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	n.Header.Del(headerIdemKey)
	n.NoIdempotencyKey = !newKey
	if newKey && Unsafe(n.Method) {
		n.Header.Set(headerIdemKey, NewIdempotencyKey())
	}
	return n
}

// WithApproval is Again with the Poppy-Approval header value (Operations 6) and a new
// Idempotency-Key. The value is built by the caller (agentcore/operations.ApprovalHeader).
func (r *Request) WithApproval(headerValue string) *Request {
	return r.Again(http.Header{headerApproval: {headerValue}}, true)
}

// NewIdempotencyKey returns a random UUID (version 4) for Idempotency-Key.
func NewIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Result is a response that arrived: its raw status, headers and body (at most 4 MiB), for
// recognizers such as the operations package (Operations 4).
type Result struct {
	// Request is what was sent last (with the Idempotency-Key used and the token of the last
	// attempt); pass it to Again to send the same request again.
	Request *Request
	Status  int
	Header  http.Header
	Body    []byte
	// Extensions is the Poppy-Extensions value the last attempt carried ("" when it declared
	// none, spec 3.4): what the Company may answer with depends on it (Operations 2).
	Extensions string
}

// JSON decodes the body into v.
func (r *Result) JSON(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("%s %s answered HTTP %d with a body that is not the JSON expected: %w", r.Request.Method, redactURL(r.Request.URL), r.Status, err)
	}
	return nil
}

// Send sends req, signed, with the handling of spec 5.6 and 7. An Idempotency-Key is added to
// an unsafe request that has none, unless NoIdempotencyKey. For an error status it returns the Result (raw status and
// body, e.g. a 403 approval_required with its operation) TOGETHER with a *transport.ProtocolError.
// A redirect is a *transport.RedirectError and a URL outside the Session destinations a
// *transport.DestinationError (nothing sent); both come without a Result.
func (c *Client) Send(ctx context.Context, req *Request) (*Result, error) {
	r := req.Again(nil, false)
	r.NoIdempotencyKey = req.NoIdempotencyKey
	if k := req.Header.Get(headerIdemKey); k != "" {
		r.Header.Set(headerIdemKey, k)
	} else if Unsafe(r.Method) && !r.NoIdempotencyKey {
		r.Header.Set(headerIdemKey, NewIdempotencyKey())
	}
	if len(r.Body) > 0 && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if r.AccessToken == "" && c.cfg.AccessToken != nil {
		tok, err := c.cfg.AccessToken(ctx, r.URL)
		if err != nil {
			return nil, fmt.Errorf("apis: getting the access token for %s %s failed: %w", r.Method, redactURL(r.URL), err)
		}
		r.AccessToken = tok
	}
	refreshed, nonceRetried, n429 := false, false, 0
	for {
		hr, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
		if err != nil {
			return nil, fmt.Errorf("apis: building %s %s: %w", r.Method, redactURL(r.URL), err)
		}
		if r.Body == nil {
			hr.Body, hr.ContentLength = nil, 0
		}
		// net/http would replay a POST that carries an Idempotency-Key after a broken keep-alive
		// connection, with the same single-use Session JWT (a replay the Company rejects). Retries
		// are decided here and by the approval queue, each with a fresh Session JWT.
		hr.GetBody = nil
		hr.Header = r.Header.Clone()
		resp, err := c.roundTrip(hr, r.AccessToken)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified {
			resp.Body.Close()
			return nil, &transport.RedirectError{Method: r.Method, URL: redactURL(r.URL), Status: resp.StatusCode, Location: resp.Header.Get("Location")}
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if rerr != nil {
			return nil, fmt.Errorf("apis: reading the response of %s %s: %w", r.Method, redactURL(r.URL), rerr)
		}
		res := &Result{Request: r, Status: resp.StatusCode, Header: resp.Header, Body: body, Extensions: hr.Header.Get("Poppy-Extensions")}
		if resp.StatusCode < 400 {
			return res, nil
		}
		pe := protocolError(r.Method, redactURL(r.URL), resp, body, c.now())
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			wait := pe.RetryAfter
			if _, ok := transport.ParseRetryAfter(resp.Header.Get("Retry-After"), c.now()); !ok {
				wait = time.Second
			}
			if n429 >= max429Retries || wait > maxRetryAfter {
				pe.Note = fmt.Sprintf("not sent again after %d rate-limited attempts (Retry-After %s)", n429+1, wait)
				return res, pe
			}
			n429++
			if err := c.cfg.Transport.Sleep(ctx, wait); err != nil {
				pe.Note = "stopped waiting: " + err.Error()
				return res, pe
			}
			continue
		case pe.Code == transport.CodeUseDPoPNonce && r.AccessToken != "" && !nonceRetried && resp.Header.Get("DPoP-Nonce") != "":
			nonceRetried = true // RFC 9449 §9: once, with the nonce in the new proof
			continue
		case pe.Code == transport.CodeInvalidToken && r.AccessToken != "" && !refreshed && c.cfg.Refresh != nil:
			refreshed = true
			nt, err := c.cfg.Refresh(ctx, r.AccessToken)
			if err != nil || nt == "" {
				pe.Note = fmt.Sprintf("refreshing the access token failed: %v", err)
				return res, withRefreshError(pe, err)
			}
			r.AccessToken = nt
			continue
		}
		return res, pe
	}
}

// refreshFailed is an invalid_token answer whose refresh failed: errors.As finds the
// *transport.ProtocolError and errors.Is the refresh error (e.g. oauth.ErrSignedOut after
// invalid_grant: the User must sign in again, spec 5.5).
type refreshFailed struct {
	pe  *transport.ProtocolError
	err error
}

func (e *refreshFailed) Error() string   { return e.pe.Error() }
func (e *refreshFailed) Unwrap() []error { return []error{e.pe, e.err} }

func withRefreshError(pe *transport.ProtocolError, err error) error {
	if err == nil {
		return pe
	}
	return &refreshFailed{pe: pe, err: err}
}

// roundTrip signs and sends one HTTP request to a Session destination (spec 5.2, 5.6): the
// transport's HTTPS-only, address-checked RoundTripper, never a redirect.
func (c *Client) roundTrip(req *http.Request, token string) (*http.Response, error) {
	u, err := transport.CheckURL(req.URL.String())
	if err != nil {
		return nil, err
	}
	if !c.isDestination(req.Context(), u) {
		return nil, &transport.DestinationError{URL: redact.URL(u)}
	}
	if u.RawQuery != "" && u.Query().Has("access_token") {
		return nil, errors.New("apis: refused a URL with access_token in its query: spec 5.6 forbids tokens in URLs")
	}
	req.Header.Set("Poppy-Version", c.cfg.Version)
	if c.cfg.Extensions != "" {
		req.Header.Set("Poppy-Extensions", c.cfg.Extensions)
	} else {
		req.Header.Del("Poppy-Extensions")
	}
	req.Header.Del("Authorization")
	req.Header.Del("DPoP")
	switch {
	case token != "" && c.cfg.Authorize != nil:
		if err := c.cfg.Authorize(req.Context(), req, token); err != nil {
			return nil, fmt.Errorf("apis: putting the access token on %s %s failed: %w", req.Method, redact.URL(u), err)
		}
	case token != "":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if err := c.cfg.Signer.SignRequest(req.Context(), req, token); err != nil {
		return nil, fmt.Errorf("apis: signing the Session header for %s %s failed: %w", req.Method, redact.URL(u), err)
	}
	// The response headers must come within the transport's Timeout; the body then streams
	// for as long as the caller's context allows (an MCP answer may take longer).
	ctx, cancel := context.WithCancel(req.Context())
	limit := c.cfg.Transport.Timeout()
	waiting := time.AfterFunc(limit, cancel)
	resp, err := c.base.RoundTrip(req.WithContext(ctx))
	if !waiting.Stop() && req.Context().Err() == nil {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &transport.TimeoutError{URL: redact.URL(u), Limit: limit}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, ctx: ctx, cancel: cancel}
	if c.cfg.OnResponse != nil {
		c.cfg.OnResponse(req.Context(), resp)
	}
	return resp, nil
}

// cancelOnClose ends a request's context when its response body is closed, and reports a body
// cut because the caller's context ended as that context's error: net/http may report such a
// cut as io.EOF, which would pass a truncated body for a complete one.
type cancelOnClose struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *cancelOnClose) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ctx.Err() != nil {
		return n, b.ctx.Err()
	}
	return n, err
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// protocolError types an error response as spec 7 does (the transport's *ProtocolError): the
// code, description, scopes, extension and resource_metadata from WWW-Authenticate first, then
// the JSON body.
func protocolError(method, redactedURL string, resp *http.Response, body []byte, now time.Time) *transport.ProtocolError {
	pe := &transport.ProtocolError{Method: method, URL: redactedURL, Status: resp.StatusCode}
	if vals := resp.Header.Values("WWW-Authenticate"); len(vals) > 0 {
		cs, _ := transport.ParseChallenges(vals)
		pe.Challenges = cs
		for _, ch := range cs {
			if code := ch.Param("error"); code != "" && pe.Code == "" {
				pe.Code, pe.Description = code, ch.Param("error_description")
			}
			if s := ch.Param("scope"); s != "" && pe.Scopes == nil {
				pe.Scopes = strings.Fields(s)
			}
			if x := ch.Param("extension"); x != "" && pe.Extension == "" {
				pe.Extension = x
			}
			if m := ch.Param("resource_metadata"); m != "" && pe.ResourceMetadata == "" {
				pe.ResourceMetadata = m
			}
		}
	}
	var jb struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
		Extension   string `json:"extension"`
		Scope       string `json:"scope"`
	}
	if len(body) > 0 && json.Unmarshal(body, &jb) == nil {
		if pe.Code == "" {
			pe.Code, pe.Description = jb.Error, jb.Description
		}
		if pe.Extension == "" {
			pe.Extension = jb.Extension
		}
		if pe.Scopes == nil && jb.Scope != "" {
			pe.Scopes = strings.Fields(jb.Scope)
		}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if pe.Code == "" {
			pe.Code = transport.CodeRateLimited
		}
		pe.RetryAfter, _ = transport.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		pe.RetryAfter, _ = transport.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	return pe
}

func redactURL(raw string) string {
	u, err := transport.CheckURL(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return redact.URL(u)
}

// Skipped is an API entry the engine does not use, with the reason.
type Skipped struct {
	API    discovery.API
	Reason string
}

// Selection is poppy.json's apis sorted by type (spec 3.1, 7).
type Selection struct {
	OpenAPI []discovery.API
	MCP     []discovery.API
	Skipped []Skipped
}

// Select sorts the Company's APIs: openapi and mcp are used; any other type is skipped, as spec 7
// says Personal Agents should, with the reason.
func Select(apis []discovery.API) Selection {
	var s Selection
	for _, a := range apis {
		switch a.Type {
		case "openapi":
			s.OpenAPI = append(s.OpenAPI, a)
		case "mcp":
			s.MCP = append(s.MCP, a)
		default:
			s.Skipped = append(s.Skipped, Skipped{API: a, Reason: fmt.Sprintf("API type %q is not one this Personal Agent implements (spec 7 defines openapi and mcp; unknown types are skipped)", a.Type)})
		}
	}
	return s
}
