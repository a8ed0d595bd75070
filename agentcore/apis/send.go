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
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Limits.
const (
	maxBody        = 4 << 20 // bytes of a response body kept
	headerApproval = headers.Approval
	headerIdemKey  = "Idempotency-Key"
)

// Config configures a Client: one Session at one Company.
type Config struct {
	// Session is the signed-request pipeline of one Session at the Company (required):
	// agentcore/engine's Client.Session, with the account's sign-in wired in. Every request of
	// this Client, API and MCP, goes through it; its Session destinations decide where the Session
	// header may go, and its transport fetches descriptions.
	Session *transport.SessionClient
	// Described holds the Session destinations of the OpenAPI descriptions read this run
	// (NewDescribed; share one per Company). Nil: this Client keeps its own, filled by
	// FetchOpenAPI only.
	Described *Described
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
	tr        *transport.Transport
	dest      *transport.Destinations
	described *Described
	now       func() time.Time
	log       *slog.Logger
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Session == nil {
		return nil, errors.New("apis: Config.Session is required: every API request goes through the signed-request pipeline (spec 5.2)")
	}
	c := &Client{cfg: cfg, tr: cfg.Session.Transport(), dest: cfg.Session.Destinations(), described: cfg.Described, now: cfg.Now, log: cfg.Logger}
	if c.described == nil {
		c.described = NewDescribed(nil)
	}
	if c.now == nil {
		c.now = c.tr.Now
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

// Send sends req through the Session's signed-request pipeline (transport.SessionClient.Send:
// spec 5.2, 5.6, 7). An Idempotency-Key is added to an unsafe request that has none, unless
// NoIdempotencyKey. A URL outside the Session destinations is signed only when a description of
// the Company read this run describes it (Described). For an error status it returns the Result
// (raw status and body, e.g. a 403 approval_required with its operation) TOGETHER with the
// pipeline's error (a *transport.ProtocolError). A redirect (*transport.RedirectError) and a
// request Poppydesk did not send (*transport.NotSentError) come without a Result.
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
	resp, err := c.cfg.Session.Send(ctx, &transport.Request{Method: r.Method, URL: r.URL, Header: r.Header, Body: r.Body,
		AccessToken: r.AccessToken, Prove: c.proves})
	if resp == nil {
		return nil, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if rerr != nil {
		return nil, fmt.Errorf("apis: reading the response of %s %s: %w", r.Method, redactURL(r.URL), rerr)
	}
	res := &Result{Request: r, Status: resp.StatusCode, Header: resp.Header, Body: body}
	if resp.Request != nil {
		res.Extensions = resp.Request.Header.Get(headers.Extensions)
	}
	return res, err
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
