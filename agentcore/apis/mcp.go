package apis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// ApprovalMetaKey is the _meta key of an approval in a tool call (Operations 6).
const ApprovalMetaKey = "personalagentprotocol.org/approval"

// TokenFunc returns the MCP server's own access token (spec 7: requested with resource set to the
// server's url), or "" when signed out. It is called for every HTTP request of the MCP transport.
type TokenFunc func(ctx context.Context) (string, error)

// MCPSession is a connection to one MCP server of the Company (spec 7), through the official SDK.
type MCPSession struct {
	URL string
	cs  *mcp.ClientSession
	rt  *mcpRoundTripper
}

// MaxMCPResponseBody bounds the bytes of each successful HTTP response body of an MCP server
// (a JSON answer, or the SSE stream answering one POST): a hostile Company could otherwise stream
// without end and exhaust memory (the SDK reads a JSON answer whole, and an SSE stream until the
// call's response). The limit is per response body, not cumulative per session: ConnectMCP
// disables the standalone SSE GET stream (DisableStandaloneSSE), so every body answers one
// request and ends with it. If the standalone stream is ever enabled, a per-body limit would cut
// a long-lived but well-behaved stream; it would then need a per-event bound instead (the SDK's
// own, 16 MiB) and this limit only for POST answers.
const MaxMCPResponseBody = 8 << 20

// ErrMCPResponseTooLarge is matched (errors.Is) when an MCP server's response body passed
// MaxMCPResponseBody.
var ErrMCPResponseTooLarge = errors.New("apis: the MCP server's response is too large")

// ConnectMCP connects to an mcp entry of poppy.json with the SDK's Streamable HTTP client. Every
// HTTP request of the MCP transport carries a fresh Session JWT (spec 5.2, 7) and, when token
// returns one, the server's access token; URLs that are not Session destinations are refused and
// redirects are never followed (spec 3). A nil token uses Config.AccessToken with the server's
// url when it is set (spec 7), and signs out otherwise. A token the server rejects with
// invalid_token is refreshed once through Config.Refresh, and a use_dpop_nonce answer is sent
// again once with the nonce (RFC 9449 §9).
func (c *Client) ConnectMCP(ctx context.Context, api discovery.API, token TokenFunc) (*MCPSession, error) {
	if api.Type != "mcp" {
		return nil, fmt.Errorf("apis: %q is a %q API, not mcp", api.URL, api.Type)
	}
	u, err := transport.CheckURL(api.URL)
	if err != nil {
		return nil, err
	}
	if !c.cfg.Destinations.Allows(u) {
		return nil, &transport.DestinationError{URL: redact.URL(u)}
	}
	if token == nil && c.cfg.AccessToken != nil {
		// spec 7: the MCP server's own token, for resource = its url from poppy.json.
		mcpURL := u.String()
		token = func(ctx context.Context) (string, error) { return c.cfg.AccessToken(ctx, mcpURL) }
	}
	rt := &mcpRoundTripper{c: c, token: token}
	hc := &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "poppydesk", Version: "0.4"}, &mcp.ClientOptions{Logger: c.log})
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u.String(), HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("apis: connecting to the MCP server %s (spec 7, Streamable HTTP) failed: %w", redact.URL(u), rt.explain(0, err))
	}
	return &MCPSession{URL: u.String(), cs: cs, rt: rt}, nil
}

// Close ends the MCP session (its DELETE is signed like every other request).
func (m *MCPSession) Close() error { return m.cs.Close() }

// Tool is one tool with its annotations (hints only: the Company's words, not guarantees).
type Tool struct {
	Name, Title, Description string
	InputSchema              json.RawMessage
	// Annotated is false when the server sent no annotations; the MCP defaults then apply:
	// not read-only, destructive, not idempotent, open world.
	Annotated   bool
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// ListTools lists every tool, following pagination.
func (m *MCPSession) ListTools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	seen := m.rt.exceeded()
	for t, err := range m.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("apis: listing the tools of %s failed: %w", m.URL, m.rt.explain(seen, err))
		}
		tool := Tool{Name: t.Name, Title: t.Title, Description: t.Description, Destructive: true, OpenWorld: true}
		tool.InputSchema, _ = json.Marshal(t.InputSchema)
		if a := t.Annotations; a != nil {
			tool.Annotated = true
			tool.ReadOnly, tool.Idempotent = a.ReadOnlyHint, a.IdempotentHint
			if a.DestructiveHint != nil {
				tool.Destructive = *a.DestructiveHint
			}
			if a.OpenWorldHint != nil {
				tool.OpenWorld = *a.OpenWorldHint
			}
			if tool.Title == "" {
				tool.Title = a.Title
			}
		}
		if tool.ReadOnly {
			tool.Destructive = false // destructiveHint is meaningful only when not read-only
		}
		out = append(out, tool)
	}
	return out, nil
}

// ToolCall is one tools/call. Keep it to call the same tool again (WithApproval).
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
	Meta      map[string]any
}

// WithApproval returns the same call (same name and arguments) with the approval in
// _meta["personalagentprotocol.org/approval"] (Operations 6).
func (t ToolCall) WithApproval(operationID, revision string) ToolCall {
	n := ToolCall{Name: t.Name, Arguments: append(json.RawMessage(nil), t.Arguments...), Meta: map[string]any{}}
	for k, v := range t.Meta {
		n.Meta[k] = v
	}
	n.Meta[ApprovalMetaKey] = map[string]any{"operation_id": operationID, "revision": revision}
	return n
}

// ToolResult is a tool result as received: isError and structuredContent kept raw for
// recognizers (Operations 4), and the text contents joined.
type ToolResult struct {
	Call              ToolCall
	IsError           bool
	Text              string
	StructuredContent json.RawMessage // nil when absent
	Meta              map[string]any
}

// CallTool calls a tool. A tool error (isError) is a ToolResult, not an error; errors are
// protocol or transport failures (a *transport.ProtocolError for HTTP-level refusals, wrapped).
func (m *MCPSession) CallTool(ctx context.Context, call ToolCall) (*ToolResult, error) {
	p := &mcp.CallToolParams{Name: call.Name}
	if len(call.Arguments) > 0 {
		if !json.Valid(call.Arguments) {
			return nil, fmt.Errorf("apis: the arguments of tool %q are not valid JSON", call.Name)
		}
		p.Arguments = call.Arguments
	}
	if len(call.Meta) > 0 {
		p.Meta = mcp.Meta(call.Meta)
	}
	seen := m.rt.exceeded()
	res, err := m.cs.CallTool(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("apis: calling tool %q at %s failed: %w", call.Name, m.URL, m.rt.explain(seen, err))
	}
	out := &ToolResult{Call: call, IsError: res.IsError, Meta: res.Meta}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		out.StructuredContent, err = json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("apis: tool %q returned structuredContent that cannot be re-encoded: %w", call.Name, err)
		}
	}
	return out, nil
}

// mcpRoundTripper signs every HTTP request of the MCP transport (spec 5.2, 7).
type mcpRoundTripper struct {
	c     *Client
	token TokenFunc

	mu        sync.Mutex
	nTooLarge int   // responses cut at MaxMCPResponseBody so far
	tooLarge  error // the last such cut
}

// exceeded is how many responses were cut at MaxMCPResponseBody so far.
func (rt *mcpRoundTripper) exceeded() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.nTooLarge
}

// explain adds the size refusal to err when a response was cut since exceeded() returned seen:
// the SDK reports such a cut as a closed connection or "request terminated without response".
func (rt *mcpRoundTripper) explain(seen int, err error) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.nTooLarge == seen || errors.Is(err, ErrMCPResponseTooLarge) {
		return err
	}
	if strings.Contains(err.Error(), rt.tooLarge.Error()) {
		// The SDK kept the text (%v) but not the error: keep both, say it once.
		return &sizeError{msg: err.Error(), errs: []error{rt.tooLarge, err}}
	}
	return fmt.Errorf("%w (%w)", rt.tooLarge, err)
}

type sizeError struct {
	msg  string
	errs []error
}

func (e *sizeError) Error() string   { return e.msg }
func (e *sizeError) Unwrap() []error { return e.errs }

func (rt *mcpRoundTripper) cut(err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.nTooLarge++
	rt.tooLarge = err
}

// limitedBody passes at most left bytes of a response body; past them every Read fails with err.
type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	err   error
	url   string
	onCut func(error)
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed shows the body goes on
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		b.err = fmt.Errorf("%w: the response of the MCP server %s passed %d bytes; it was cut and the call failed. A Company's MCP server must answer within that size (a hostile or broken server may stream without end); ask the Company to fix it", ErrMCPResponseTooLarge, b.url, MaxMCPResponseBody)
		b.onCut(b.err)
		return n, b.err
	}
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

func (rt *mcpRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" {
		// The SDK resumes an SSE answer that broke off; after a cut, a resumption would only
		// fetch another MaxMCPResponseBody from a server that already sent too much (and one
		// that keeps sending event ids would be resumed without end). The refusal is answered
		// as a 400 built here, nothing sent: the SDK retries transport errors with growing
		// delays for about 20 s, but fails the connection at once on an error status.
		rt.mu.Lock()
		tooLarge := rt.tooLarge
		rt.mu.Unlock()
		if tooLarge != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			msg := "refused to resume the stream: " + tooLarge.Error()
			return &http.Response{
				Status: "400 Bad Request", StatusCode: http.StatusBadRequest, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
				Body:   io.NopCloser(strings.NewReader(msg)), ContentLength: int64(len(msg)), Request: req,
			}, nil
		}
	}
	var body []byte
	if req.Body != nil {
		// Kept so the request can be sent again after a refresh or a DPoP nonce.
		b, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("apis: reading the MCP request body failed: %w", err)
		}
		if len(b) > maxBody {
			return nil, fmt.Errorf("apis: the MCP request body is larger than %d bytes", maxBody)
		}
		body = b
	}
	tok := ""
	if rt.token != nil {
		t, err := rt.token(ctx)
		if err != nil {
			return nil, fmt.Errorf("apis: getting the MCP server's access token failed: %w", err)
		}
		tok = t
	}
	refreshed, nonceRetried := false, false
	for {
		r := req.Clone(ctx) // a RoundTripper must not modify the caller's request
		if req.Body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		resp, err := rt.c.roundTrip(r, tok)
		if err != nil {
			return nil, err
		}
		// Poppy and OAuth refusals become the transport's typed errors (spec 7); JSON-RPC level
		// errors pass through to the SDK.
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusUnauthorized ||
			resp.StatusCode >= 400 && (resp.Header.Get("WWW-Authenticate") != "" || poppyErrorBody(resp)) {
			eb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			pe := protocolError(r.Method, redact.URL(r.URL), resp, eb, rt.c.now())
			switch {
			case pe.Code == transport.CodeUseDPoPNonce && tok != "" && !nonceRetried && resp.Header.Get("DPoP-Nonce") != "":
				nonceRetried = true // RFC 9449 §9: once, with the nonce in the new proof
				continue
			case pe.Code == transport.CodeInvalidToken && tok != "" && !refreshed && rt.c.cfg.Refresh != nil:
				refreshed = true // spec 4.4, 7: refresh once and send again
				nt, err := rt.c.cfg.Refresh(ctx, tok)
				if err == nil && nt != "" {
					tok = nt
					continue
				}
				pe.Note = fmt.Sprintf("refreshing the access token failed: %v", err)
				return nil, withRefreshError(pe, err)
			}
			return nil, pe
		}
		resp.Body = &limitedBody{rc: resp.Body, left: MaxMCPResponseBody, url: redact.URL(r.URL), onCut: rt.cut}
		return resp, nil
	}
}

// poppyErrorBody peeks whether a 400 carries a Session error (spec 5.3, 3.4, 5.5) without
// consuming the body for the SDK.
func poppyErrorBody(resp *http.Response) bool {
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	switch e.Error {
	case transport.CodeInvalidSession, transport.CodeSessionEnded, transport.CodeVersionUnsupported:
		return true
	}
	return false
}
