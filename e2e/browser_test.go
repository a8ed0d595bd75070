package e2e

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/browser"
)

// browsingActions gives the model's MCP server the window's browser (as cli_browser.go does).
type browsingActions struct {
	modelapi.Actions
	b modelapi.BrowserActions
}

func (a browsingActions) Browser() modelapi.BrowserActions { return a.b }

// TestModelBrowsesJoined: the model's browser tools, over MCP, drive Debian's headless Chromium
// joined to the Session of the reference Company (spec 6); the window's Browser state shows the
// page's screenshot, URL and join state; nothing the model receives carries the join code, and
// no browser request carried a token.
func TestModelBrowsesJoined(t *testing.T) {
	_, chromium := prerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secrets := store.NewSecrets(store.NewMemoryKV())
	log := slog.New(slog.DiscardHandler)
	e, err := engine.New(engine.Config{Transport: s.ClientConfig(), Secrets: secrets, State: engine.NewMemoryState(), Logger: log,
		Identity: identity.Config{ClientID: s.URL(poppytest.AgentHost, "/agent.json"), ClientName: "Poppydesk"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	s.AddHost(poppytest.AgentHost, e.Agent().Handler(log))
	oc, err := oauth.New(oauth.Config{Transport: e.Transport(), Identity: e.Agent(), Secrets: secrets, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e.SetOAuth(oc)
	co, err := e.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	mgr := &browser.Manager{Root: t.TempDir(), Base: browser.Options{ExecPath: chromium, TrustSPKI: []string{leafSPKI(t, s)}}}
	defer mgr.Close()
	svc, model := app.NewBrowser(app.BrowserConfig{Manager: mgr, Log: log,
		Engine: func() (*engine.Engine, browserjoin.StatusFunc) { return e, browserjoin.OAuthStatus(oc) }})
	srv, err := modelapi.NewServer(modelapi.Deps{Actions: browsingActions{b: model}})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	start := time.Now()
	r := call("browser_open", map[string]any{"company": co.Identifier, "url": s.URL(poppytest.ShopHost, "/account")})
	t.Logf("first browser_open (Chromium start + join + page): %s", time.Since(start))
	if r.IsError || !strings.Contains(text(r), "This browser is the Personal Agent's Session") || !strings.Contains(text(r), modelapi.UntrustedWarning) {
		t.Fatalf("browser_open: %s", text(r))
	}
	r = call("browser_open", map[string]any{"company": co.Identifier, "url": s.BrowserSessionEndpoint()})
	if !r.IsError || strings.Contains(text(r), "bc_") {
		t.Errorf("the model opened the browser-session endpoint: %s", text(r))
	}
	r = call("browser_screenshot", map[string]any{"company": co.Identifier})
	var img bool
	for _, c := range r.Content {
		_, ok := c.(*mcp.ImageContent)
		img = img || ok
	}
	if r.IsError || !img {
		t.Errorf("screenshot: %s", text(r))
	}
	state := svc.State()
	if !state.Open || !strings.HasPrefix(state.Screenshot, "data:image/png;base64,") || !strings.HasSuffix(state.URL, "/account") || !state.Joined || state.SignedIn {
		t.Errorf("window state: open %v url %q joined %v signedIn %v shot %d bytes", state.Open, state.URL, state.Joined, state.SignedIn, len(state.Screenshot))
	}
	if len(s.Joins()) != 1 {
		t.Errorf("%d joins", len(s.Joins()))
	}
	if leaks := s.BrowserRequestsCarryingTokens(); len(leaks) != 0 {
		t.Errorf("%d browser requests carried a token", len(leaks))
	}
}
