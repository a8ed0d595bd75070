package modelapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/modelapi/relay"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Environment variables that turn the test binary into a helper process.
const (
	envRelay = "POPPYDESK_MODELAPI_TEST_RELAY" // relay stdio to this socket (what `poppydesk mcp --socket PATH --no-start` does)
	envDial  = "POPPYDESK_MODELAPI_TEST_DIAL"  // try to connect to this socket (as any program could) and report
)

func TestMain(m *testing.M) {
	if p := os.Getenv(envRelay); p != "" {
		err := relay.Run(context.Background(), relay.Options{Endpoint: p, NoStart: true, Getenv: os.Getenv,
			Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if p := os.Getenv(envDial); p != "" {
		var d net.Dialer
		conn, err := d.DialContext(context.Background(), "unix", p)
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

// Markers the canary plants in every secret that can carry one (the canary test looks for
// them).
const (
	accessMarker  = "CANARYaccess7f3b9c1d"
	mcpMarker     = "CANARYmcpaccess4e6a0b2c"
	refreshMarker = "CANARYrefresh2a8e4f60"
	agentMarker   = "CANARYagent5d1c7b93"
	account       = "alice"
)

// fixture: an engine over the reference Company as the Host builds one (poppytest.NewEngine:
// state database on disk, one clock), the approval queue and conversation manager over it, the
// model's MCP server over them (modelapi.NewServer with EngineActions, as the Host builds it) on
// its Unix socket, and an SDK client connected to it.
type fixture struct {
	s       *refcompany.Server
	eng     *poppytest.Engine
	e       *engine.Engine
	q       *approvals.Queue
	secrets store.Secrets
	actions *modelapi.EngineActions
	signins *modelapi.MemorySignInRequests
	socket  string
	cs      *mcp.ClientSession

	mu    sync.Mutex
	notes []string // every notification the client received (the canary reads them)
}

type fopts struct {
	faults []string
	// signedIn signs account "alice" in with Direct Sign-In, with scopes (default orders:read
	// and orders:write).
	signedIn bool
	scopes   []string
	// canary signs the account in with the markers instead: the keyring gets what a sign-in
	// leaves, with a marker in every secret that can carry one (the default access token, a
	// token for the MCP server's resource, spec 7, the refresh token and the Agent ID), and the
	// reference Company accepts the marker tokens. No sign-in runs, so this works with
	// discovery faults too.
	canary bool
}

// actions are the model's tools' Actions over the fixture: the engine's and the queue's, and the
// conversation manager (ConversationProvider), as the Host gives them.
type actions struct {
	*modelapi.EngineActions
	m *conversation.Manager
}

func (a actions) Conversations() (*conversation.Manager, error) { return a.m, nil }

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func newFixture(t testing.TB, o fopts) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Unix socket paths are short: a folder of its own under the temporary directory, with the
	// socket in a subfolder the model interface makes private (0700).
	dir, err := os.MkdirTemp("", "pdm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	clk := &refcompany.Clock{}
	f := &fixture{s: poppytest.Start(t, refcompany.Options{Faults: o.faults, Now: clk.Now})}
	f.eng = poppytest.NewEngine(t, f.s, poppytest.EngineOptions{Clock: clk, Transport: func(c *transport.Config) { c.Sleep = noWait }})
	f.e, f.secrets = f.eng.Engine, f.eng.Secrets
	if f.q, err = approvals.New(approvals.Config{Engine: f.e, Store: f.eng.State, Now: clk.Now, Sleep: noWait}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.q.Close() })
	m, err := conversation.New(conversation.Config{Engine: f.e, Store: f.eng.State, Now: clk.Now, Sleep: noWait,
		OnOperation: func(ctx context.Context, found conversation.OperationFound) { f.q.ProposeFromConversation(ctx, found) }})
	if err != nil {
		t.Fatal(err)
	}
	if f.actions, err = modelapi.NewEngineActions(f.e, f.q); err != nil {
		t.Fatal(err)
	}
	f.signins = modelapi.NewMemorySignInRequests(nil)
	path := filepath.Join(dir, "run", "mcp.sock")
	if runtime.GOOS == "windows" {
		// The model interface is a named pipe there (endpoint_windows.go).
		path = `\\.\pipe\poppydesk-modelapi-test-` + filepath.Base(dir)
	}
	f.serve(t, ctx, path, actions{EngineActions: f.actions.ListFrom(f.eng.State), m: m}, clk)
	if o.signedIn {
		scopes := o.scopes
		if len(scopes) == 0 {
			scopes = []string{"orders:read", "orders:write"}
		}
		if o.canary {
			f.plantMarkers(t, scopes)
		} else {
			f.eng.SignIn(t, f.s, account, scopes...)
			f.s.ResetRequests() // what the tests look at starts after the sign-in
		}
	}
	f.cs = f.connect(t, ctx)
	return f
}

// serve serves the model's MCP server over a on the Unix socket path until the test ends.
func (f *fixture) serve(t testing.TB, ctx context.Context, path string, a modelapi.Actions, clk *refcompany.Clock) {
	t.Helper()
	srv, err := modelapi.NewServer(modelapi.Deps{Actions: a, SignIns: f.signins, Now: clk.Now, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := modelapi.Listen(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		modelapi.Serve(ctx, ln, srv, nil)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	f.socket = path
}

// plantMarkers puts the account's secrets in the keyring as a sign-in leaves them, each one a
// marker: the default access token and refresh token, a token for the MCP server's resource, and
// an Agent ID. The reference Company accepts both marker access tokens with scopes.
func (f *fixture) plantMarkers(t testing.TB, scopes []string) {
	t.Helper()
	clientID := f.e.Agent().ClientID()
	f.s.AddAccessToken(accessMarker, clientID, scopes...)
	f.s.AddAccessToken(mcpMarker, clientID, scopes...)
	_, err := f.secrets.UpdateCompany(context.Background(), f.s.Identifier(), account, func(b *store.CompanyBundle) error {
		b.AgentID = agentMarker
		exp := time.Now().Add(time.Hour)
		b.Tokens = []store.Token{
			{AccessToken: accessMarker, RefreshToken: refreshMarker, TokenType: "Bearer", Scopes: scopes, ExpiresAt: exp},
			{Resource: f.s.MCPURL(), AccessToken: mcpMarker, TokenType: "Bearer", Scopes: scopes, ExpiresAt: exp},
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
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
