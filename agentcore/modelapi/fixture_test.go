package modelapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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

// Environment variables that turn the test binary into a helper process.
const (
	envRelay = "POPPYDESK_MODELAPI_TEST_RELAY" // relay stdio to this socket (what `poppydesk mcp` does)
	envDial  = "POPPYDESK_MODELAPI_TEST_DIAL"  // try to connect to this socket and report
)

func TestMain(m *testing.M) {
	if p := os.Getenv(envRelay); p != "" {
		conn, err := modelapi.Dial(context.Background(), p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay:", err)
			os.Exit(1)
		}
		if err := modelapi.Relay(context.Background(), conn, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "relay:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if p := os.Getenv(envDial); p != "" {
		conn, err := modelapi.Dial(context.Background(), p)
		switch {
		case err == nil:
			served := connectedProbe(conn)
			conn.Close()
			if served {
				fmt.Printf("connected and served as uid %d\n", os.Getuid())
				os.Exit(3)
			}
			fmt.Printf("connected as uid %d but closed by the server\n", os.Getuid())
			os.Exit(5)
		case errors.Is(err, syscall.EACCES):
			fmt.Printf("denied as uid %d: %v\n", os.Getuid(), err)
			os.Exit(0)
		default:
			fmt.Printf("other error as uid %d: %v\n", os.Getuid(), err)
			os.Exit(4)
		}
	}
	os.Exit(m.Run())
}

// Markers planted in every secret that can carry one (the canary test looks for them).
const (
	accessMarker  = "CANARYaccess7f3b9c1d"
	refreshMarker = "CANARYrefresh2a8e4f60"
	agentMarker   = "CANARYagent5d1c7b93"
	account       = "alice"
)

// fixture: the reference Company, the real engine and approval queue, the model interface on a
// Unix socket, and an SDK client connected to it.
type fixture struct {
	s       *poppytest.Server
	e       *engine.Engine
	q       *approvals.Queue
	secrets store.Secrets
	actions *modelapi.EngineActions
	signins *modelapi.MemorySignInRequests
	act     *modelapi.Activity
	srv     *mcp.Server
	socket  string
	cs      *mcp.ClientSession

	mu     sync.Mutex
	events []approvals.Event
	notes  []string // every notification the client received (the canary reads them)
}

type fopts struct {
	faults   []string
	signedIn bool
	// scopes are the signed-in account's scopes (default orders:read and orders:write).
	scopes []string
}

func newFixture(t testing.TB, o fopts) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{}
	s, err := poppytest.New(poppytest.Options{Faults: o.faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.s = s
	f.secrets = store.NewSecrets(store.NewMemoryKV())
	tc := s.ClientConfig()
	tc.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	log := slog.New(slog.DiscardHandler)
	clientID := s.URL(poppytest.AgentHost, "/agent.json")
	f.e, err = engine.New(engine.Config{Transport: tc, Identity: identity.Config{ClientID: clientID, ClientName: "Poppydesk modelapi test"},
		Secrets: f.secrets, State: store.NewMemoryEngineState(), Logger: log, AgentID: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.e.Close(context.Background()) })
	s.AddHost(poppytest.AgentHost, f.e.Agent().Handler(log))
	if o.signedIn {
		scopes := o.scopes
		if len(scopes) == 0 {
			scopes = []string{"orders:read", "orders:write"}
		}
		s.AddAccessToken(accessMarker, clientID, scopes...)
		_, err := f.secrets.UpdateCompany(ctx, s.Identifier(), account, func(b *store.CompanyBundle) error {
			b.AgentID = agentMarker
			b.Tokens = []store.Token{{AccessToken: accessMarker, RefreshToken: refreshMarker, TokenType: "Bearer",
				Scopes: scopes, ExpiresAt: time.Now().Add(time.Hour)}}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	f.q, err = approvals.New(approvals.Config{Engine: f.e, Store: store.NewMemoryApprovals(), Logger: log,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		OnChange: func(ev approvals.Event) {
			f.mu.Lock()
			f.events = append(f.events, ev)
			f.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.q.Close() })
	if f.actions, err = modelapi.NewEngineActions(f.e, f.q, f.secrets); err != nil {
		t.Fatal(err)
	}
	f.signins = modelapi.NewMemorySignInRequests(nil)
	f.act = modelapi.NewActivity(50)
	f.srv, err = modelapi.NewServer(modelapi.Deps{Actions: f.actions, SignIns: f.signins, Activity: f.act, Logger: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pdm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f.socket = filepath.Join(dir, "run", modelapi.SocketName)
	ln, err := modelapi.Listen(ctx, f.socket)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- modelapi.Serve(ctx, ln, f.srv, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	f.cs = f.connect(t, ctx)
	return f
}

// connect opens an SDK client session over the socket.
func (f *fixture) connect(t testing.TB, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	conn, err := modelapi.Dial(ctx, f.socket)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "modelapi-test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(r.Params)
			f.note(string(b))
		},
		ToolListChangedHandler: func(_ context.Context, r *mcp.ToolListChangedRequest) { f.note("tools/list_changed") },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			b, _ := json.Marshal(r.Params)
			f.note(string(b))
		},
	})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (f *fixture) note(s string) {
	f.mu.Lock()
	f.notes = append(f.notes, s)
	f.mu.Unlock()
}

// reply is a tool result as the model receives it.
type reply struct {
	IsError bool
	Text    string
	SC      map[string]any
	Raw     string // the whole result, JSON
}

func (r reply) status() string  { s, _ := r.SC["status"].(string); return s }
func (r reply) message() string { s, _ := r.SC["message"].(string); return s }
func (r reply) approvalID() string {
	s, _ := r.SC["approval_id"].(string)
	return s
}

// call calls a tool and returns what the model gets; a JSON-RPC error is returned as err.
func (f *fixture) call(t testing.TB, name string, args any) (reply, error) {
	t.Helper()
	return callOn(t, f.cs, name, args)
}

func callOn(t testing.TB, cs *mcp.ClientSession, name string, args any) (reply, error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return reply{Raw: err.Error()}, err
	}
	raw, _ := json.Marshal(res)
	r := reply{IsError: res.IsError, Raw: string(raw)}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	r.Text = strings.Join(texts, "\n")
	if sc, ok := res.StructuredContent.(map[string]any); ok {
		r.SC = sc
	}
	return r, nil
}

func (f *fixture) mustCall(t testing.TB, name string, args any) reply {
	t.Helper()
	r, err := f.call(t, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// exchangeArgs are call_api_operation's arguments for the spec's jacket exchange.
func (f *fixture) exchangeArgs(extra map[string]any) map[string]any {
	a := map[string]any{"company": f.s.Domain, "operation_id": "exchangeItem", "path_params": map[string]any{"id": "ord_7Hk2"},
		"body":   map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"},
		"intent": map[string]any{"replacement_sku": "stormline-insulated-m"}}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// approveInWindow approves the item as the window does: the revision and digest it shows.
func (f *fixture) approveInWindow(t testing.TB, id string) *approvals.Outcome {
	t.Helper()
	it, err := f.q.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.q.Approve(context.Background(), id, it.Current.Revision, it.Current.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
