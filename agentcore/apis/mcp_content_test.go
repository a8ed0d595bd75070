package apis_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// companyMCP serves srv (the official Go SDK's server) at the test transport's hostile host and
// connects a session to it; timeout is the transport's exchange timeout (0: its default).
func companyMCP(t *testing.T, srv *mcp.Server, timeout time.Duration) *apis.MCPSession {
	t.Helper()
	f := newFixture(t)
	f.s.AddHost(hostileHost, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	mcpURL := f.s.URL(hostileHost, "/mcp")
	var b transport.DestinationsBuilder
	if err := b.Exact(mcpURL); err != nil {
		t.Fatal(err)
	}
	tr := f.tr
	if timeout > 0 {
		tr = poppytest.Transport(t, f.s, func(c *transport.Config) { c.Timeout = timeout })
	}
	c := f.clientOver(t, tr, f.session(t, "alice", opsV2), b.Build(), transport.Hooks{}, nil)
	m, err := c.ConnectMCP(context.Background(), discovery.API{Type: "mcp", URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func resultTool(srv *mcp.Server, name string, content ...mcp.Content) {
	srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: content}, nil
	})
}

// TestMCPContentWhole: every content type of a tool result is kept (text, image, audio, an
// embedded text or binary resource, a resource link), in order; past MaxToolContentBytes a
// block is left out, or a text cut, each with a note.
func TestMCPContentWhole(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "company"}, nil)
	size := int64(42)
	png := []byte("\x89PNG\r\n\x1a\nimage-bytes")
	resultTool(srv, "all",
		&mcp.TextContent{Text: "here it is"},
		&mcp.ImageContent{Data: png, MIMEType: "image/png"},
		&mcp.AudioContent{Data: []byte("RIFF....WAVE"), MIMEType: "audio/wav"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "doc://1", MIMEType: "text/plain", Text: "a document"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "blob://1", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
		&mcp.ResourceLink{URI: "https://company.example/r/1", Name: "r1", MIMEType: "text/html", Size: &size},
	)
	big := make([]byte, apis.MaxToolContentBytes-100)
	resultTool(srv, "big",
		&mcp.ImageContent{Data: big, MIMEType: "image/png"},
		&mcp.ImageContent{Data: png, MIMEType: "image/png"}, // still fits
		&mcp.ImageContent{Data: make([]byte, 1000), MIMEType: "image/jpeg"},
		&mcp.TextContent{Text: strings.Repeat("é", 1000)},
	)
	m := companyMCP(t, srv, 0)
	res, err := m.CallTool(context.Background(), apis.ToolCall{Name: "all", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range res.Content {
		types = append(types, c.Type)
		if c.Omitted {
			t.Errorf("%s omitted: %s", c.Type, c.Note)
		}
	}
	if strings.Join(types, ",") != "text,image,audio,resource,resource,resource_link" || string(res.Content[1].Data) != string(png) ||
		res.Content[2].MIMEType != "audio/wav" || res.Content[3].Text != "a document" || len(res.Content[4].Data) != 3 ||
		res.Content[5].URI != "https://company.example/r/1" || *res.Content[5].Size != 42 || res.Text != "here it is" {
		t.Fatalf("content %+v", res.Content)
	}

	res, err = m.CallTool(context.Background(), apis.ToolCall{Name: "big", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Content
	if len(c) != 4 || c[0].Omitted || c[1].Omitted || !c[2].Omitted || c[2].Data != nil || !strings.Contains(c[2].Note, "left out this image (image/jpeg, 1000 bytes)") ||
		!c[3].Omitted || !strings.Contains(c[3].Note, "cut this text") || !strings.HasPrefix(strings.Repeat("é", 1000), c[3].Text) {
		for _, b := range c {
			t.Logf("%s omitted=%v %d bytes, note %q", b.Type, b.Omitted, len(b.Data)+len(b.Text), b.Note)
		}
		t.Fatal("the budget was not kept")
	}
}

// TestMCPCallTimeout: a Company tool that streams (progress) without answering ends at the
// caller's timeout, or at the transport's exchange timeout when the caller gives none, with an
// error that says so; the Company's progress reaches the caller under Poppydesk's own token.
func TestMCPCallTimeout(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "company"}, nil)
	var mu sync.Mutex
	var tokens []any
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := req.Params.GetProgressToken()
		mu.Lock()
		tokens = append(tokens, tok)
		mu.Unlock()
		for i := 1; ctx.Err() == nil; i++ {
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Message: "working"})
			} else {
				req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"})
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		return nil, ctx.Err()
	})
	m := companyMCP(t, srv, 2*time.Second)

	var got []apis.Progress
	var gmu sync.Mutex
	ctx := apis.WithProgress(context.Background(), func(p apis.Progress) { gmu.Lock(); got = append(got, p); gmu.Unlock() })
	_, err := m.CallTool(ctx, apis.ToolCall{Name: "slow", Arguments: json.RawMessage(`{}`), Timeout: 500 * time.Millisecond})
	var te *apis.MCPTimeoutError
	if !errors.As(err, &te) || te.After != 500*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the caller's timeout: %v", err)
	}
	// The SSE answer's headers and progress come at once, so only the bound ends the call.
	_, err = m.CallTool(ctx, apis.ToolCall{Name: "slow", Arguments: json.RawMessage(`{}`)})
	if !errors.As(err, &te) || te.After != 2*time.Second {
		t.Fatalf("the transport's timeout: %v", err)
	}
	gmu.Lock()
	defer gmu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Message != "working" || len(tokens) != 2 || !strings.HasPrefix(tokens[0].(string), "poppydesk-") || tokens[1] == tokens[0] {
		t.Fatalf("progress %+v, tokens the Company saw %v", got, tokens)
	}
}
