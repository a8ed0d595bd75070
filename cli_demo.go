package main

// `poppydesk demo`: the window connected to the reference Company (agentcore/poppytest) on
// loopback, in the dev mode of /work/notes/devmode.md (DESIGN.md "Demo and test networking"):
// its host names map to 127.0.0.1 and its generated CA is trusted for them only
// (poppytest.Server.ClientConfig); the Personal Agent's client metadata and JWKS are served on
// agent.localhost by the same listener, with client_id https://agent.localhost:PORT/agent.json.
//
// The demo is throwaway: its state database lives in a temporary folder and its secrets in
// memory (never in the user's keyring or data folder), and both are removed when it ends.
//
// Until the sign-in screens are wired into the demo, the demo account is signed in the way a
// finished sign-in leaves it: the reference Company accepts a random access token for the demo
// client, stored in the demo's (in-memory) secret store. The window's demo buttons then ask for
// the spec's jacket exchange, as the model would, and the Company answers with an operation.

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
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

func init() { startDemoCompany = startDemo }

// demoAccount is the reference Company's account the demo acts for.
const demoAccount = poppytest.DefaultAccount

// demoRuntime is the running demo: the reference Company and the engine configured for it.
type demoRuntime struct {
	info        DemoInfo
	srv         *poppytest.Server
	eng         *engine.Engine
	st          *vault.State
	secrets     store.Secrets
	closeEngine func(context.Context) error
	openAPI     string // apis[].url of the Orders API
	mcp         string // apis[].url of the MCP server
	log         *lateHandler
}

var (
	demoMu      sync.Mutex
	demoPending *demoRuntime
)

// takeDemo hands the started demo to the window's engine wiring (once).
func takeDemo() *demoRuntime {
	demoMu.Lock()
	defer demoMu.Unlock()
	d := demoPending
	demoPending = nil
	return d
}

func (d *demoRuntime) setLogger(l *slog.Logger) { d.log.set(l.Handler()) }

func startDemo(ctx context.Context) (DemoInfo, func(), error) {
	log := newLateHandler()
	logger := slog.New(log)
	srv, err := poppytest.New(poppytest.Options{Logger: logger})
	if err != nil {
		return DemoInfo{}, nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return DemoInfo{}, nil, err
	}
	dir, err := os.MkdirTemp("", "poppydesk-demo-")
	if err != nil {
		srv.Close()
		return DemoInfo{}, nil, fmt.Errorf("making the demo's temporary folder failed: %w", err)
	}
	fail := func(err error) (DemoInfo, func(), error) {
		srv.Close()
		os.RemoveAll(dir)
		return DemoInfo{}, nil, err
	}
	secrets := store.NewSecrets(store.NewMemoryKV())
	clientID := srv.URL(poppytest.AgentHost, "/agent.json")
	eng, st, closeEngine, err := openEngine(ctx, filepath.Join(dir, stateFileName), engine.Config{
		Transport: srv.ClientConfig(),
		Identity:  identity.Config{ClientID: clientID, ClientName: "Poppydesk (demo)"},
		Secrets:   secrets,
		Logger:    logger,
	})
	if err != nil {
		return fail(fmt.Errorf("starting the demo engine failed: %w", err))
	}
	srv.AddHost(poppytest.AgentHost, eng.Agent().Handler(logger))
	co, err := eng.Discover(ctx, srv.Domain)
	if err != nil {
		_ = closeEngine(context.Background())
		return fail(fmt.Errorf("discovering the reference Company failed: %w", err))
	}
	token := "demo-" + identity.NewID(24)
	srv.AddAccessToken(token, clientID, "orders:read", "orders:write")
	if _, err := secrets.UpdateCompany(ctx, co.Identifier, demoAccount, func(b *store.CompanyBundle) error {
		b.Tokens = append(b.Tokens, store.Token{AccessToken: token, TokenType: "Bearer", Scopes: []string{"orders:read", "orders:write"}})
		b.AccountLabel = "demo account"
		return nil
	}); err != nil {
		_ = closeEngine(context.Background())
		return fail(err)
	}
	d := &demoRuntime{info: DemoInfo{Name: co.Organization.Name, Identifier: co.Identifier}, srv: srv, eng: eng, st: st,
		secrets: secrets, log: log}
	for _, a := range co.Document.APIs {
		switch a.Type {
		case "openapi":
			d.openAPI = a.URL
		case "mcp":
			d.mcp = a.URL
		}
	}
	// The window's engine wiring closes the engine (after the queue); if it never takes the
	// demo (an error before the hooks), stop closes it.
	var closed atomic.Bool
	d.closeEngine = func(ctx context.Context) error {
		if closed.Swap(true) {
			return nil
		}
		return closeEngine(ctx)
	}
	demoMu.Lock()
	demoPending = d
	demoMu.Unlock()
	stop := func() {
		if takeDemo() != nil {
			_ = d.closeEngine(context.Background())
		}
		srv.Close()
		os.RemoveAll(dir)
	}
	return d.info, stop, nil
}

// request returns the demo buttons' action: ask the reference Company for the spec's jacket
// exchange through its API or its MCP server, as the model would (a request, never an
// approval). The Company answers with an operation and the dialog opens. The kind
// app.DemoKindAgent ("Run the example agent") runs the scripted example agent instead, which
// asks for the same exchange through the window's model interface.
func (d *demoRuntime) request(q *approvals.Queue) func(ctx context.Context, kind string) (string, error) {
	return func(ctx context.Context, kind string) (string, error) {
		intent := map[string]string{"replacement_sku": "stormline-insulated-m", "price_difference": "70.00"}
		var out *approvals.Outcome
		var err error
		switch kind {
		case "api":
			out, err = q.CallAPI(ctx, approvals.APICall{Company: d.info.Identifier, Account: demoAccount, API: d.openAPI, OperationID: "exchangeItem",
				Input:  apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)},
				Intent: intent})
		case app.DemoKindAgent:
			return "", d.runExampleAgent(ctx)
		case "mcp":
			out, err = q.CallTool(ctx, approvals.ToolCall{Company: d.info.Identifier, Account: demoAccount, Server: d.mcp, Tool: "exchange_item",
				Arguments: json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`), Intent: intent})
		default:
			return "", fmt.Errorf("unknown demo kind %q", kind)
		}
		if err != nil {
			return "", err
		}
		msg := "Poppydesk: " + out.Message
		if out.Message == "" {
			msg = "Poppydesk: status " + out.Status + "."
		}
		if out.Text != "" {
			msg += " The Company said: " + operations.Visible(out.Text)
		}
		return msg, nil
	}
}

// runExampleAgent runs the scripted example agent (modelapi.ExampleAgent) in-process against the
// window's own model socket, through the same MCP client code as `poppydesk example-agent
// --socket`, so it reaches Poppydesk exactly as a model does: it can ask, and it waits for the
// user's decision in the window. Its lines go to app.AgentOutput(ctx) (the window).
func (d *demoRuntime) runExampleAgent(ctx context.Context) error {
	socket := windowModelSocket()
	if socket == "" {
		return errors.New("the window's model interface is not listening (the Inspector says why), so the example agent has nothing to talk to")
	}
	return modelapi.RunExampleAgentOnSocket(ctx, socket, d.srv.Domain, 5*time.Minute, version, lineWriter(app.AgentOutput(ctx)))
}

// lineWriter is an io.Writer that passes each complete line to say.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}

// lateHandler is a slog.Handler whose target is set once the window's log is open (the demo
// starts before the window's hooks run); entries before that are dropped. Derived handlers
// (WithAttrs, WithGroup) share the target and replay their steps on it.
type lateHandler struct {
	root *atomic.Pointer[slog.Handler]
	ops  []func(slog.Handler) slog.Handler
}

func newLateHandler() *lateHandler { return &lateHandler{root: new(atomic.Pointer[slog.Handler])} }

func (l *lateHandler) set(h slog.Handler) { l.root.Store(&h) }

func (l *lateHandler) target() slog.Handler {
	p := l.root.Load()
	if p == nil {
		return nil
	}
	h := *p
	for _, op := range l.ops {
		h = op(h)
	}
	return h
}

func (l *lateHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	h := l.target()
	return h != nil && h.Enabled(ctx, lv)
}

func (l *lateHandler) Handle(ctx context.Context, r slog.Record) error {
	if h := l.target(); h != nil {
		return h.Handle(ctx, r)
	}
	return nil
}

func (l *lateHandler) with(op func(slog.Handler) slog.Handler) *lateHandler {
	return &lateHandler{root: l.root, ops: append(append([]func(slog.Handler) slog.Handler(nil), l.ops...), op)}
}

func (l *lateHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return l.with(func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })
}

func (l *lateHandler) WithGroup(name string) slog.Handler {
	return l.with(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}
