//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// modelAPIApp is the app side of the model interface in a test: the reference Company, the
// engine, the approval queue, and modelapi's server on a Unix socket.
type modelAPIApp struct {
	s       *poppytest.Server
	q       *approvals.Queue
	socket  string
	created chan string // approval IDs as the queue creates them
}

func startModelAPIApp(t *testing.T, signedIn bool) *modelAPIApp {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	log := slog.New(slog.DiscardHandler)
	secrets := store.NewSecrets(store.NewMemoryKV())
	clientID := s.URL(poppytest.AgentHost, "/agent.json")
	e, err := engine.New(engine.Config{Transport: s.ClientConfig(), Identity: identity.Config{ClientID: clientID, ClientName: "example-agent test"},
		Secrets: secrets, State: store.NewMemoryEngineState(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	s.AddHost(poppytest.AgentHost, e.Agent().Handler(log))
	if signedIn {
		s.AddAccessToken("tok-example-agent", clientID, "orders:read", "orders:write")
		if _, err := secrets.UpdateCompany(ctx, s.Identifier(), "me", func(b *store.CompanyBundle) error {
			b.Tokens = []store.Token{{AccessToken: "tok-example-agent", TokenType: "Bearer", Scopes: []string{"orders:read", "orders:write"}}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	a := &modelAPIApp{s: s, created: make(chan string, 10)}
	a.q, err = approvals.New(approvals.Config{Engine: e, Store: store.NewMemoryApprovals(), Logger: log, OnChange: func(ev approvals.Event) {
		if ev.Kind == "created" {
			a.created <- ev.ApprovalID
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.q.Close() })
	actions, err := modelapi.NewEngineActions(e, a.q, secrets)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := modelapi.NewServer(modelapi.Deps{Actions: actions, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pdx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	a.socket = filepath.Join(dir, "run", modelapi.SocketName)
	ln, err := modelapi.Listen(ctx, a.socket)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); modelapi.Serve(ctx, ln, srv, log) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return a
}

// TestExampleAgent: the scripted agent asks for the jacket exchange through the socket, is told
// it waits for the user, and reports the outcome after the user decides in the window.
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
			a := startModelAPIApp(t, tc.signedIn)
			go func() { // the user, in the window
				select {
				case id := <-a.created:
					it, err := a.q.Get(context.Background(), id)
					if err != nil {
						t.Error(err)
						return
					}
					if tc.approve {
						a.q.Approve(context.Background(), id, it.Current.Revision, it.Current.Digest)
					} else {
						a.q.Decline(context.Background(), id, it.Current.Revision)
					}
				case <-time.After(10 * time.Second):
				}
			}()
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"example-agent", "--company", a.s.Domain, "--socket", a.socket, "--wait", "20s"}, &out, &errb)
			t.Log(out.String(), errb.String())
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q", code, tc.code, tc.want)
			}
			if tc.code == 0 && !strings.Contains(out.String(), "NOT performed: it waits for your decision") {
				t.Fatal("the agent never reported that it waits for the user")
			}
			if n := len(a.s.Ledger()); (n == 1) != tc.approve {
				t.Fatalf("ledger has %d entries", n)
			}
		})
	}
}

// TestMCPRelayCommand: `poppydesk mcp --socket PATH` relays an MCP client's stdio to the app;
// without an app and with --no-start it says so; when the app cannot start, its own error is
// reported on stderr.
func TestMCPRelayCommand(t *testing.T) {
	a := startModelAPIApp(t, false)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	old := mcpStdin
	mcpStdin = inR
	t.Cleanup(func() { mcpStdin = old })
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- run(context.Background(), []string{"mcp", "--socket", a.socket}, outW, &errb)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "relay-command-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: modelapi.ToolDiscoverCompany, Arguments: map[string]any{"domain": a.s.Domain}})
	if err != nil || res.IsError {
		t.Fatalf("through `poppydesk mcp`: %v %+v", err, res)
	}
	cs.Close()
	if code := <-done; code != 0 {
		t.Fatalf("mcp exited %d: %s", code, errb.String())
	}

	missing := filepath.Join(t.TempDir(), "none.sock")
	errb.Reset()
	if code := run(context.Background(), []string{"mcp", "--socket", missing, "--no-start"}, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "no Poppydesk app answers") {
		t.Fatalf("--no-start: exit %d: %s", code, errb.String())
	}

	oldApp := appCommand
	appCommand = func() (*exec.Cmd, error) {
		return exec.Command("sh", "-c", "echo 'cannot open display: no DISPLAY' >&2; exit 1"), nil
	}
	t.Cleanup(func() { appCommand = oldApp })
	errb.Reset()
	if code := run(context.Background(), []string{"mcp", "--socket", missing, "--start-wait", "5s"}, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "cannot open display") || !strings.Contains(errb.String(), "starting it failed") {
		t.Fatalf("failed start: exit %d: %s", code, errb.String())
	}
}
