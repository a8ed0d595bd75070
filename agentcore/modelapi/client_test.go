package modelapi_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// TestRequesterReachesTheApproval: the name, title and version an MCP client gives in initialize,
// and the way it reached the socket, are what the approval queue records as the requester of
// the operation the client's call produced, so the window can say which agent asked.
func TestRequesterReachesTheApproval(t *testing.T) {
	cases := []struct {
		name   string
		client mcp.Implementation
		relay  bool
		want   string
	}{
		{"through the relay, with a title", mcp.Implementation{Name: "claude-code", Title: "Claude Code", Version: "2.1.0"}, true, "Claude Code 2.1.0 via " + modelapi.ViaRelay},
		{"in this process, with a name only", mcp.Implementation{Name: "my-agent", Version: "0.3"}, false, "my-agent 0.3"},
		{"a name with invisible characters", mcp.Implementation{Name: "Safe\u202eAgent\n", Version: "1"}, false, "SafeAgent 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fopts{signedIn: true})
			ctx := context.Background()
			var tr mcp.Transport
			if tc.relay {
				tr = &mcp.CommandTransport{Command: relayCommand(f.socket)}
			} else {
				conn, err := modelapi.Dial(ctx, f.socket)
				if err != nil {
					t.Fatal(err)
				}
				tr = &mcp.IOTransport{Reader: conn, Writer: conn}
			}
			impl := tc.client
			cs, err := mcp.NewClient(&impl, nil).Connect(ctx, tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			r, err := callOn(t, cs, modelapi.ToolCallAPIOperation, f.exchangeArgs(nil))
			if err != nil || r.status() != "waiting_for_user" {
				t.Fatalf("call_api_operation: %v %s", err, r.Raw)
			}
			it, err := f.q.Get(ctx, r.approvalID())
			if err != nil {
				t.Fatal(err)
			}
			if it.Request.Requester != tc.want {
				t.Errorf("requester = %q, want %q", it.Request.Requester, tc.want)
			}
		})
	}
}
