package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
	"github.com/poppydesk/poppydesk/browser"
)

// modelBrowsing is the reference Company, the Host as `poppydesk` builds it (apptest) with its
// controlled browsers in Debian's headless Chromium, the model's MCP client over the Host's
// model server, and the window (its services on the bridge, the real frontend in Chromium)
// showing the Browser section.
type modelBrowsing struct {
	s      *refcompany.Server
	co     *discovery.Company
	svc    *fronts.Browser
	cs     *mcp.ClientSession
	window *approvalWorld
}

// newModelBrowsing starts it all; edit, when not nil, changes the Company's poppy.json before
// discovery.
func newModelBrowsing(t *testing.T, ctx context.Context, edit func(doc map[string]any)) *modelBrowsing {
	t.Helper()
	dist, chromium := prerequisites(t)
	clock := &refcompany.Clock{}
	s, err := refcompany.New(refcompany.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if edit != nil {
		s.EditPoppyJSON(edit)
	}
	// The controlled browser trusts exactly the reference Company's key (as in the demo).
	spki := leafSPKI(t, s)
	f := apptest.Start(t, apptest.Options{Company: s, Clock: clock, Edit: func(c *app.Config) {
		c.Browser = browser.Options{ExecPath: chromium, TrustSPKI: []string{spki}}
	}})
	co := f.Discover(t)

	cs := f.Model(t, "e2e")

	srv := serveWindow(t, ctx, f.Host, dist)
	bctx := windowBrowser(t, ctx, chromium, 1200, 860)
	if _, err := chromedp.Run(bctx, chromedp.NavigateResponse(srv.URL()+"#/browser")); err != nil {
		t.Fatalf("opening the window page failed: %v", err)
	}
	w := &approvalWorld{t: t, bctx: bctx}
	w.waitFor("the window to load", `document.body.dataset.ready === "true"`, 10*time.Second)
	w.waitFor("the Browser section", `document.getElementById("section-title").textContent === "Browser"`, 10*time.Second)
	return &modelBrowsing{s: s, co: co, svc: f.Fronts().Browser, cs: cs, window: w}
}

// shows waits until the window's Browser section shows a page whose address ends with path,
// its screenshot, and the join state in words containing join.
func (m *modelBrowsing) shows(t *testing.T, path, join string) {
	t.Helper()
	w := m.window
	w.t = t
	w.waitFor("the page in the Browser section", fmt.Sprintf(`(document.getElementById("browser-url")?.textContent ?? "").endsWith(%q) && (document.getElementById("browser-join")?.textContent ?? "").includes(%q)`, path, join), 20*time.Second)
	if got := w.eval(`(document.getElementById("browser-shot")?.getAttribute("src") ?? "").slice(0, 22)`); got != "data:image/png;base64," {
		t.Errorf("the Browser section shows no screenshot of the page (src starts %q)", got)
	}
	if got := w.eval(`JSON.stringify([window.__errors, window.__csp])`); got != `[[],[]]` {
		t.Errorf("page errors or CSP violations: %s", got)
	}
}

func (m *modelBrowsing) call(t *testing.T, ctx context.Context, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// statusOf is the status word of a tool result's structured content.
func statusOf(r *mcp.CallToolResult) string {
	b, _ := json.Marshal(r.StructuredContent)
	var v struct{ Status string }
	json.Unmarshal(b, &v)
	return v.Status
}

func toolText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// authorizations counts the engine's POST {endpoint}/authorize requests the Company received.
func (m *modelBrowsing) authorizations() int {
	return len(m.s.RequestsTo(refcompany.ShopHost, refcompany.BrowserSessionPath+"/authorize"))
}

// TestModelBrowsesJoined: the model's browser tools, over MCP, drive Debian's headless Chromium
// joined to the Session of the reference Company (spec 6); the window's Browser state shows the
// page's screenshot, URL and join state; nothing the model receives carries the join code, and
// no browser request carried a token. When the website forgets the Session, the model's next
// browse joins again. One browser serves all subtests.
func TestModelBrowsesJoined(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	m := newModelBrowsing(t, ctx, nil)
	s, co := m.s, m.co

	t.Run("joined before the first page", func(t *testing.T) {
		start := time.Now()
		r := m.call(t, ctx, "browser_open", map[string]any{"company": co.Identifier, "url": s.URL(refcompany.ShopHost, "/account")})
		t.Logf("first browser_open (Chromium start + join + page): %s", time.Since(start))
		if r.IsError || !strings.Contains(toolText(r), "This browser is the Personal Agent's Session") || !strings.Contains(toolText(r), modelapi.UntrustedWarning) {
			t.Fatalf("browser_open: %s", toolText(r))
		}
		r = m.call(t, ctx, "browser_open", map[string]any{"company": co.Identifier, "url": s.BrowserSessionEndpoint()})
		if !r.IsError || strings.Contains(toolText(r), "bc_") {
			t.Errorf("the model opened the browser-session endpoint: %s", toolText(r))
		}
		r = m.call(t, ctx, "browser_screenshot", map[string]any{"company": co.Identifier})
		var img bool
		for _, c := range r.Content {
			_, ok := c.(*mcp.ImageContent)
			img = img || ok
		}
		if r.IsError || !img {
			t.Errorf("screenshot: %s", toolText(r))
		}
		state := m.svc.State()
		if !state.Open || !strings.HasPrefix(state.Screenshot, "data:image/png;base64,") || !strings.HasSuffix(state.URL, "/account") || !state.Joined || state.SignedIn {
			t.Errorf("window state: open %v url %q joined %v signedIn %v shot %d bytes", state.Open, state.URL, state.Joined, state.SignedIn, len(state.Screenshot))
		}
		if len(s.Joins()) != 1 || m.authorizations() != 1 {
			t.Errorf("%d joins, %d authorize requests; want 1 and 1", len(s.Joins()), m.authorizations())
		}
		m.shows(t, "/account", "Joined to your Session, signed out.")
		html := m.window.eval(`document.documentElement.outerHTML`)
		for _, code := range s.IssuedJoinCodes() {
			if strings.Contains(html, code) {
				t.Error("the window shows a join code")
			}
		}
	})

	t.Run("refuses the model's arguments in words", func(t *testing.T) {
		// A URL off the website, the browser-session endpoint and a form the page does not have
		// are refusals of the model's arguments (status refused), not failures of Poppydesk.
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"browser_open", map[string]any{"company": co.Identifier, "url": "https://example.com/"}},
			{"browser_open", map[string]any{"company": co.Identifier, "url": s.BrowserSessionEndpoint()}},
			{"browser_open", map[string]any{"company": co.Identifier, "url": s.URL(refcompany.ShopHost, "/a/%2e%2e/account")}},
			{"browser_submit_form", map[string]any{"company": co.Identifier, "form": "no-such-form", "fields": map[string]any{}}},
		} {
			r := m.call(t, ctx, c.tool, c.args)
			if st := statusOf(r); st != "refused" || !r.IsError {
				t.Errorf("%s %v: status %q (error %v), want refused: %s", c.tool, c.args, st, r.IsError, toolText(r))
			}
		}
	})

	t.Run("joins again when the website no longer recognizes the Session", func(t *testing.T) {
		joins, auths := len(s.Joins()), m.authorizations()
		if n := s.ForgetWebSessions(); n == 0 {
			t.Fatal("the website had no Session to forget")
		}
		// The next browse: the website does not recognize the browser (and drops its cookie),
		// so the browser joins again and the page is loaded again, as the Session.
		r := m.call(t, ctx, "browser_open", map[string]any{"company": co.Identifier, "url": s.URL(refcompany.ShopHost, "/account")})
		if r.IsError || !strings.Contains(toolText(r), "This browser is the Personal Agent's Session") {
			t.Fatalf("browser_open after the website forgot the Session: %s", toolText(r))
		}
		if len(s.Joins()) != joins+1 || m.authorizations() != auths+1 {
			t.Errorf("joins %d→%d, authorize requests %d→%d; want one more of each", joins, len(s.Joins()), auths, m.authorizations())
		}
		// And it stays joined: another browse needs no join.
		m.call(t, ctx, "browser_read", map[string]any{"company": co.Identifier})
		if len(s.Joins()) != joins+1 {
			t.Errorf("%d joins after one more read, want %d", len(s.Joins()), joins+1)
		}
	})

	t.Run("no browser request carried a token", func(t *testing.T) {
		if leaks := s.BrowserRequestsCarryingTokens(); len(leaks) != 0 {
			t.Errorf("%d browser requests carried a token", len(leaks))
		}
	})
}

// TestModelBrowsesWithoutEndpoint: a Company whose poppy.json lists no
// web.browser_session_endpoint is browsed as an ordinary signed-out visitor (spec 6): the
// model's browser opens its website with no join attempt, the engine sends no authorize
// request, and the website sees a visitor that is not a Session.
func TestModelBrowsesWithoutEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	m := newModelBrowsing(t, ctx, func(doc map[string]any) { delete(doc, "web") })
	s, co := m.s, m.co
	if co.Channels.Web != nil && co.Channels.Web.BrowserSessionEndpoint != "" {
		t.Fatalf("the Company still lists browser_session_endpoint %q", co.Channels.Web.BrowserSessionEndpoint)
	}
	for _, page := range []string{"/account", "/orders"} {
		r := m.call(t, ctx, "browser_open", map[string]any{"company": co.Identifier, "url": s.URL(refcompany.ShopHost, page)})
		txt := toolText(r)
		if r.IsError || !strings.Contains(txt, "This browser is not a Personal Agent's Session") || !strings.Contains(txt, "Not signed in") ||
			!strings.Contains(txt, "signed-out visitor") {
			t.Fatalf("browser_open %s: %s", page, txt)
		}
	}
	if n := len(s.RequestsTo(refcompany.ShopHost, refcompany.BrowserSessionPath)); n != 0 {
		t.Errorf("the browser loaded the browser-session page %d times", n)
	}
	if n := m.authorizations(); n != 0 {
		t.Errorf("the engine sent %d authorize requests", n)
	}
	if len(s.Joins()) != 0 {
		t.Errorf("joins: %+v", s.Joins())
	}
	st := m.svc.State()
	if !st.Open || st.Joined || st.SignedIn || !strings.Contains(st.JoinText, "signed-out visitor") || !strings.HasSuffix(st.URL, "/orders") {
		t.Errorf("window state: open %v joined %v signedIn %v %q url %q", st.Open, st.Joined, st.SignedIn, st.JoinText, st.URL)
	}
	m.shows(t, "/orders", "signed-out visitor")
}
