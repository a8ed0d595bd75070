package poppytest

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

// Engine is an engine over the reference Company (agentcore/engine) as the Host builds one, for
// the protocol packages' tests: its state in an SQLite file on disk (vault.State), its secrets in
// memory unless given, Poppydesk's identity published on the Company's agent host, developer
// mode for the Company's hosts, and the Company's clock. Tests of agentcore packages build on it
// without the Host (app/apptest is for what the Host composes).
type Engine struct {
	*engine.Engine
	State   *vault.State
	Secrets store.Secrets
	// Path is the state database's file: a restart (EngineOptions.Path) opens it again.
	Path string
}

// EngineOptions configure NewEngine. The zero value is a new state database and secrets in memory.
type EngineOptions struct {
	// Clock is the Company's clock (nil: time.Now).
	Clock *refcompany.Clock
	// Path is the state database to open ("": a new one in the test's temporary folder); Secrets
	// the keyring's stand-in (nil: a new one in memory). A restart passes the earlier engine's.
	Path    string
	Secrets store.Secrets
	// Transport changes the transport's configuration last (timeouts, Sleep, Observer).
	Transport func(*transport.Config)
	// Logger receives the engine's logs (nil: discarded).
	Logger *slog.Logger
}

// NewEngine builds the engine, publishes its identity on the Company's agent host, and closes
// both at the end of the test.
func NewEngine(t TB, s *refcompany.Server, o EngineOptions) *Engine {
	t.Helper()
	e := &Engine{Secrets: o.Secrets, Path: o.Path}
	if e.Secrets == nil {
		e.Secrets = store.NewSecrets(store.NewMemoryKV())
	}
	if e.Path == "" {
		e.Path = filepath.Join(t.TempDir(), "state.sqlite")
	}
	clk := o.Clock
	if clk == nil {
		clk = &refcompany.Clock{}
	}
	now := clk.Now
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var err error
	if e.State, err = vault.OpenState(context.Background(), e.Path, vault.StateOptions{Now: now, Logger: logger}); err != nil {
		t.Fatalf("opening the state database: %v", err)
	}
	t.Cleanup(func() { e.State.Close() })
	tc := s.ClientConfig()
	if o.Transport != nil {
		o.Transport(&tc)
	}
	e.Engine, err = engine.New(engine.Config{Transport: tc, Secrets: e.Secrets, State: e.State, Logger: logger, Now: now,
		Identity: identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json"), ClientName: "Poppydesk (agentcore tests)"}})
	if err != nil {
		t.Fatalf("building the engine: %v", err)
	}
	t.Cleanup(func() { e.Engine.Close(context.Background()) })
	s.AddHost(refcompany.AgentHost, e.Agent().Handler(logger))
	return e
}

// Discover discovers the reference Company.
func (e *Engine) Discover(t TB, s *refcompany.Server) *discovery.Company {
	t.Helper()
	co, err := e.Engine.Discover(context.Background(), s.Domain)
	if err != nil {
		t.Fatalf("discovering the reference Company: %v", err)
	}
	return co
}

// SignIn signs account in with Direct Sign-In (spec 4.2) for scopes, the reference Company
// approving every scope the authorization URL asks for (those and the ones the account already
// holds, spec 4.7) on its consent page, as the user would in their browser.
func (e *Engine) SignIn(t TB, s *refcompany.Server, account string, scopes ...string) {
	t.Helper()
	ctx := context.Background()
	co := e.Discover(t, s)
	flow, err := e.OAuth().StartDirect(ctx, oauth.SignInRequest{Company: co, Account: account, Scopes: scopes})
	if err != nil {
		t.Fatalf("starting the sign-in: %v", err)
	}
	u, err := url.Parse(flow.URL)
	if err != nil {
		t.Fatalf("the authorization URL: %v", err)
	}
	if err := s.ApproveSignIn(ctx, flow.URL, "user@shop.example", strings.Fields(u.Query().Get("scope"))); err != nil {
		t.Fatalf("approving the sign-in at the Company: %v", err)
	}
	if _, err := flow.Wait(ctx); err != nil {
		t.Fatalf("the sign-in: %v", err)
	}
}

// Close closes the engine and its state database, as Poppydesk stopping does; a restart then
// opens a new engine over the same Path and Secrets.
func (e *Engine) Close() {
	e.Engine.Close(context.Background())
	e.State.Close()
}
