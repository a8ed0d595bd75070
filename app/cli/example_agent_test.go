//go:build unix

package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// approvalsCreated reports the IDs of approvals the Host creates, as the window hears them.
func approvalsCreated(h *app.Host) <-chan string {
	ch := make(chan string, 10)
	h.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if name != app.EventApprovalsChanged || len(data) == 0 {
			return
		}
		if c, ok := data[0].(app.ApprovalChange); ok && c.Kind == "created" {
			ch <- c.ID
		}
	}))
	return ch
}

// TestExampleAgent: the scripted agent asks for the jacket exchange through the Host's model
// socket, is told it waits for the user, and reports the outcome after the user decides in the
// window.
func TestExampleAgent(t *testing.T) {
	tests := []struct {
		name     string
		signedIn bool
		approve  bool
		code     int
		want     string
	}{
		{"approved", true, true, 0, "Outcome: the exchange was performed after your approval."},
		{"declined", true, false, 0, "Outcome: you declined; nothing was exchanged."},
		{"signed out", false, false, 1, "Sign in there in the Poppydesk window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := apptest.Start(t, apptest.Options{Socket: true})
			if tc.signedIn {
				f.SignIn(t, "me", "orders:read", "orders:write")
			}
			created := approvalsCreated(f.Host)
			decided := make(chan struct{})
			go func() { // the user, in the window
				defer close(decided)
				select {
				case id := <-created:
					w := f.Fronts().Approvals
					it, err := w.Get(id)
					if err != nil {
						t.Error(err)
						return
					}
					if tc.approve {
						if _, err := w.Approve(id, it.Current.Revision, it.Current.Digest); err != nil {
							t.Error(err)
						}
					} else if err := w.Decline(id, it.Current.Revision); err != nil {
						t.Error(err)
					}
				case <-time.After(20 * time.Second):
				}
			}()
			code, out, errs := runCLI(t, testEnv(t.TempDir()), "example-agent", "--company", f.Company.Domain, "--socket", f.Host.Socket(), "--wait", "20s")
			// The agent can learn the outcome before the window's Approve has returned; the
			// Host closes only after the user's side is done.
			<-decided
			t.Log(out, errs)
			if code != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Fatalf("exit %d, want %d with %q", code, tc.code, tc.want)
			}
			if tc.code == 0 && !strings.Contains(out, "NOT performed: it waits for your decision") {
				t.Fatal("the agent never reported that it waits for the user")
			}
			if n := len(f.Company.Ledger()); (n == 1) != tc.approve {
				t.Fatalf("ledger has %d entries", n)
			}
		})
	}
}

// TestMCPRelayCommand: `poppydesk mcp --socket PATH` relays an MCP client's stdio to the Host
// and exits 0 when the client closes. (mcp_environment_test.go has what it says when it cannot
// reach or start the app.)
func TestMCPRelayCommand(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Socket: true})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	env := testEnv(t.TempDir())
	env.Stdin, env.Stdout = inR, outW
	done := make(chan int, 1)
	errb := &syncBuffer{}
	env.Stderr = errb
	go func() {
		done <- Run(context.Background(), []string{"mcp", "--socket", f.Host.Socket()}, env)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "relay-command-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: modelapi.ToolDiscoverCompany, Arguments: map[string]any{"domain": f.Company.Domain}})
	if err != nil || res.IsError {
		t.Fatalf("through `poppydesk mcp`: %v %+v", err, res)
	}
	cs.Close()
	if code := <-done; code != 0 {
		t.Fatalf("mcp exited %d: %s", code, errb.String())
	}
}
