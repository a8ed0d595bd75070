package apis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// ApprovalMetaKey is the _meta key of an approval in a tool call (Operations 6).
const ApprovalMetaKey = "personalagentprotocol.org/approval"

// MCPSession is a connection to one MCP server of the Company (spec 7), through the official SDK.
type MCPSession struct {
	URL     string
	cs      *mcp.ClientSession
	rt      *mcpRoundTripper
	timeout time.Duration // the transport's exchange timeout

	mu       sync.Mutex
	progress map[string]func(Progress) // by progress token, for the calls under way
	nextTok  int
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

// ConnectMCP connects to an mcp entry of poppy.json with the SDK's Streamable HTTP client, whose
// every HTTP request goes through the Session's signed-request pipeline
// (transport.SessionClient.RoundTripper): a fresh Session JWT on each (spec 5.2, 7), the MCP
// server's own access token for resource = its url when signed in (spec 7, through the
// pipeline's Token hook), URLs that are not Session destinations refused, redirects never
// followed (spec 3), and the pipeline's policy for invalid_token, use_dpop_nonce, 429,
// session_ended and version_unsupported. Each response body is bounded (MaxMCPResponseBody).
func (c *Client) ConnectMCP(ctx context.Context, api discovery.API) (*MCPSession, error) {
	if api.Type != "mcp" {
		return nil, fmt.Errorf("apis: %q is a %q API, not mcp", api.URL, api.Type)
	}
	u, err := transport.CheckURL(api.URL)
	if err != nil {
		return nil, err
	}
	if !c.dest.Allows(u) {
		return nil, &transport.DestinationError{URL: redact.URL(u)}
	}
	rt := &mcpRoundTripper{next: c.cfg.Session.RoundTripper()}
	hc := &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	m := &MCPSession{URL: u.String(), rt: rt, timeout: c.tr.Timeout(), progress: map[string]func(Progress){}}
	cl := mcp.NewClient(&mcp.Implementation{Name: "poppydesk", Version: "0.4"}, &mcp.ClientOptions{Logger: c.log,
		ProgressNotificationHandler: m.onProgress})
	cctx, cancel := m.bound(ctx, 0)
	defer cancel()
	cs, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: u.String(), HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("apis: connecting to the MCP server %s (spec 7, Streamable HTTP) failed: %w", redact.URL(u), m.timedOut(cctx, rt.explain(0, err)))
	}
	m.cs = cs
	return m, nil
}

// BoundMCP is ctx limited to one exchange with the MCP server at url: timeout when given (> 0),
// else the transport's exchange timeout (30 s by default), never later than ctx's own deadline.
// An exchange that passes it ends with an *MCPTimeoutError. A caller that connects and calls
// within one BoundMCP keeps the whole call to one bound: the bounds of ConnectMCP and CallTool
// inside it end no later.
func (c *Client) BoundMCP(ctx context.Context, url string, timeout time.Duration) (context.Context, context.CancelFunc) {
	return (&MCPSession{URL: url, timeout: c.tr.Timeout()}).bound(ctx, timeout)
}

// bound is ctx limited to one exchange: the caller's timeout when given (> 0), else the
// transport's exchange timeout (30 s by default), and never later than ctx's own deadline. The
// transport's ResponseHeaderTimeout alone does not bound an MCP call: a Streamable HTTP server
// answers a POST with the headers of an SSE stream at once and may then stream (progress, log
// messages) for as long as it likes.
func (m *MCPSession) bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = m.timeout
	}
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, timeout, &MCPTimeoutError{URL: m.URL, After: timeout})
}

// timedOut returns the bound's own error when ctx ended at the bound, else err.
func (m *MCPSession) timedOut(ctx context.Context, err error) error {
	var te *MCPTimeoutError
	if c := context.Cause(ctx); errors.As(c, &te) {
		return fmt.Errorf("%w (%v)", te, err)
	}
	return err
}

// MCPTimeoutError is an MCP exchange that passed its time bound (the caller's timeout, or the
// transport's exchange timeout). It matches context.DeadlineExceeded.
type MCPTimeoutError struct {
	URL   string
	After time.Duration
}

func (e *MCPTimeoutError) Error() string {
	return fmt.Sprintf("apis: the MCP server %s did not finish answering within %s; Poppydesk stopped waiting", e.URL, e.After)
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *MCPTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Progress is one progress notification of a Company MCP server about a tool call. Message is
// the Company's words (untrusted).
type Progress struct {
	Progress, Total float64
	Message         string
}

type progressKey struct{}

// WithProgress returns ctx carrying f: a tool call made with it (MCPSession.CallTool) asks the
// Company's MCP server for progress with a token of Poppydesk's own and passes each notification
// to f. Any caller in between (the approval queue) only passes ctx on.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func (m *MCPSession) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	m.mu.Lock()
	f := m.progress[tok]
	m.mu.Unlock()
	if f != nil {
		f(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
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
	ctx, cancel := m.bound(ctx, 0)
	defer cancel()
	for t, err := range m.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("apis: listing the tools of %s failed: %w", m.URL, m.timedOut(ctx, m.rt.explain(seen, err)))
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
	// Timeout bounds the call (0: the transport's exchange timeout, 30 s by default); a
	// deadline of the caller's ctx that comes first wins.
	Timeout time.Duration
}

// WithApproval returns the same call (same name and arguments) with the approval in
// _meta["personalagentprotocol.org/approval"] (Operations 6).
func (t ToolCall) WithApproval(operationID, revision string) ToolCall {
	n := ToolCall{Name: t.Name, Arguments: append(json.RawMessage(nil), t.Arguments...), Meta: map[string]any{}, Timeout: t.Timeout}
	for k, v := range t.Meta {
		n.Meta[k] = v
	}
	n.Meta[ApprovalMetaKey] = map[string]any{"operation_id": operationID, "revision": revision}
	return n
}

// ToolResult is a tool result as received: isError and structuredContent kept raw for
// recognizers (Operations 4), the text contents joined, and every content block, whole within
// MaxToolContentBytes.
type ToolResult struct {
	Call              ToolCall
	IsError           bool
	Text              string
	StructuredContent json.RawMessage // nil when absent
	Content           []Content
	Meta              map[string]any
}

// MaxToolContentBytes is the budget of one tool result's content blocks: the bytes of their
// texts and data (images, audio, embedded resources) together. A block past it is left out, and
// a text cut, each with a Note that says so; the response itself is bounded by
// MaxMCPResponseBody.
const MaxToolContentBytes = 2 << 20

// Content is one content block of a tool result (MCP ContentBlock), as Poppydesk passes it on:
// everything in it is the Company's, except Note and Omitted.
type Content struct {
	// Type is text, image, audio, resource (embedded) or resource_link.
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`      // text, and an embedded text resource
	MIMEType string `json:"mime_type,omitempty"` // image, audio, resource, resource_link
	// Data is the raw bytes of an image, audio or embedded binary resource.
	Data        []byte `json:"data,omitempty"`
	URI         string `json:"uri,omitempty"` // resource, resource_link
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"` // resource_link: the size the Company gives
	// Omitted is set when Poppydesk left the block's data out or cut its text (the budget);
	// Note says so in Poppydesk's words.
	Omitted bool   `json:"omitted,omitempty"`
	Note    string `json:"note,omitempty"`
}

// contentOf converts the SDK's content blocks, spending at most budget bytes.
func contentOf(cs []mcp.Content, budget int) []Content {
	var out []Content
	left := budget
	for _, c := range cs {
		var b Content
		var payload int
		switch c := c.(type) {
		case *mcp.TextContent:
			b = Content{Type: "text", Text: c.Text}
			payload = len(c.Text)
		case *mcp.ImageContent:
			b = Content{Type: "image", MIMEType: c.MIMEType, Data: c.Data}
			payload = len(c.Data)
		case *mcp.AudioContent:
			b = Content{Type: "audio", MIMEType: c.MIMEType, Data: c.Data}
			payload = len(c.Data)
		case *mcp.EmbeddedResource:
			b = Content{Type: "resource"}
			if r := c.Resource; r != nil {
				b.URI, b.MIMEType, b.Text, b.Data = r.URI, r.MIMEType, r.Text, r.Blob
				payload = len(r.Text) + len(r.Blob)
			}
		case *mcp.ResourceLink:
			b = Content{Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size}
			payload = len(c.URI) + len(c.Name) + len(c.Title) + len(c.Description)
		default:
			continue // sampling-only types (tool_use, tool_result) are not tool result content
		}
		switch {
		case payload <= left:
			left -= payload
		case b.Text != "" && b.Data == nil && left > 0:
			cut := left
			for cut > 0 && !utf8.RuneStart(b.Text[cut]) {
				cut--
			}
			b.Text = b.Text[:cut]
			b.Omitted = true
			b.Note = fmt.Sprintf("Poppydesk cut this %s after %d of its %d bytes: a tool result reaches the model with at most %d KiB of content", b.Type, cut, payload, budget>>10)
			left = 0
		default:
			b.Text, b.Data, b.Omitted = "", nil, true
			b.Note = fmt.Sprintf("Poppydesk left out this %s (%s, %d bytes): a tool result reaches the model with at most %d KiB of content, and it was used up", b.Type, orUnknown(b.MIMEType), payload, budget>>10)
		}
		out = append(out, b)
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "type not given"
	}
	return s
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
	if f, ok := ctx.Value(progressKey{}).(func(Progress)); ok && f != nil {
		// Poppydesk's own token: nothing of the model's request metadata reaches the Company.
		m.mu.Lock()
		m.nextTok++
		tok := fmt.Sprintf("poppydesk-%d", m.nextTok)
		m.progress[tok] = f
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			delete(m.progress, tok)
			m.mu.Unlock()
		}()
		if p.Meta == nil {
			p.Meta = mcp.Meta{}
		} else {
			p.Meta = maps.Clone(p.Meta)
		}
		p.SetProgressToken(tok)
	}
	seen := m.rt.exceeded()
	ctx, cancel := m.bound(ctx, call.Timeout)
	defer cancel()
	res, err := m.cs.CallTool(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("apis: calling tool %q at %s failed: %w", call.Name, m.URL, m.timedOut(ctx, m.rt.explain(seen, err)))
	}
	out := &ToolResult{Call: call, IsError: res.IsError, Meta: res.Meta, Content: contentOf(res.Content, MaxToolContentBytes)}
	var texts []string
	for _, c := range out.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
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

// mcpRoundTripper is the MCP transport's own step in front of the signed-request pipeline
// (next): it bounds each response body at MaxMCPResponseBody and refuses to resume a stream it
// cut (spec 7; a hostile server could stream without end).
type mcpRoundTripper struct {
	next http.RoundTripper

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
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: MaxMCPResponseBody, url: redact.URL(req.URL), onCut: rt.cut}
	return resp, nil
}
