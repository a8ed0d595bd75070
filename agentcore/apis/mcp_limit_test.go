package apis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// hostileHost is a name the test transport maps to loopback; AddHost replaces its handler.
const hostileHost = refcompany.OtherHost

// hostileMCP answers initialize like an MCP server, then answers tools/call with a body that
// never ends (JSON, or SSE events with or without ids), counting what it wrote and every resume.
type hostileMCP struct {
	mode    string // "json", "sse", "sse-ids"
	written atomic.Int64
	resumes atomic.Int64
}

func (h *hostileMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		h.resumes.Add(1)
		http.Error(w, "no", http.StatusMethodNotAllowed)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	switch msg.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`, msg.ID)
		return
	case "tools/call":
	default:
		if len(msg.ID) == 0 { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
		return
	}
	chunk := bytes.Repeat([]byte("A"), 32<<10)
	if h.mode == "json" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, msg.ID)
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
		event := `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("A", 4<<10) + `"}}` + "\n\n"
		chunk = []byte(strings.Repeat(event, 8))
		if h.mode == "sse-ids" {
			chunk = nil
			for i := range 8 {
				chunk = append(chunk, fmt.Sprintf("id: e%d\n%s", i, event)...)
			}
		}
	}
	fl, _ := w.(http.Flusher)
	for r.Context().Err() == nil {
		n, err := w.Write(chunk)
		h.written.Add(int64(n))
		if err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		if h.written.Load() > 20*apis.MaxMCPResponseBody {
			return // a runaway test stops here instead of forever; the assertions below fail
		}
	}
}

// TestMCPResponseSizeLimit: a hostile MCP server that streams a response without end (a JSON
// answer or an SSE stream, resumable or not) makes the call fail with ErrMCPResponseTooLarge
// after MaxMCPResponseBody bytes, instead of exhausting memory; nothing is resumed after the cut.
func TestMCPResponseSizeLimit(t *testing.T) {
	for _, mode := range []string{"json", "sse", "sse-ids"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t)
			h := &hostileMCP{mode: mode}
			f.s.AddHost(hostileHost, h)
			mcpURL := f.s.URL(hostileHost, "/mcp")
			var b transport.DestinationsBuilder
			if err := b.Exact(mcpURL); err != nil {
				t.Fatal(err)
			}
			c := f.clientOver(t, f.tr, f.session(t, "alice", opsV2), b.Build(), transport.Hooks{}, nil)
			ctx := context.Background()
			m, err := c.ConnectMCP(ctx, discovery.API{Type: "mcp", URL: mcpURL})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			_, err = m.CallTool(ctx, apis.ToolCall{Name: "anything", Arguments: json.RawMessage(`{}`)})
			if !errors.Is(err, apis.ErrMCPResponseTooLarge) || !strings.Contains(err.Error(), "passed 8388608 bytes") {
				t.Fatalf("err = %v; want ErrMCPResponseTooLarge with the limit", err)
			}
			t.Logf("error: %v", err)
			// The server could write the limit plus what the sockets buffer, not 20 times it.
			if w := h.written.Load(); w > 3*apis.MaxMCPResponseBody {
				t.Fatalf("the server wrote %d bytes before the client stopped reading", w)
			}
			if n := h.resumes.Load(); n != 0 {
				t.Fatalf("%d resumptions after the cut", n)
			}
		})
	}
}
