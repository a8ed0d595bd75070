package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
	"github.com/poppydesk/poppydesk/app/webbridge"
)

const testVersion = "e2e-1.2.3"

// sections lists, in navigation order, each section's heading and a phrase of its empty state.
var sections = []struct{ id, title, empty string }{
	{"approvals", "Approvals", "Nothing is waiting for your approval"},
	{"companies", "Companies", "No Companies yet"},
	{"signin", "Sign-in", "No sign-in in progress"},
	{"conversations", "Conversations", "No conversations yet"},
	{"browser", "Browser", "The controlled browser is closed"},
	{"inspector", "Inspector", "Every exchange with a Company appears here on a timeline"},
	{"settings", "Settings", ""}, // Settings has sections, never an empty state
}

// prerequisites returns the built frontend and Chromium, or skips (fails with
// POPPYDESK_REQUIRE_E2E=1) when one is missing.
func prerequisites(t testing.TB) (dist, chromium string) {
	t.Helper()
	require := os.Getenv("POPPYDESK_REQUIRE_E2E") == "1"
	missing := func(msg string) {
		if require {
			t.Fatalf("%s (POPPYDESK_REQUIRE_E2E=1)", msg)
		}
		t.Skip(msg + "; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
	}
	dist, _ = filepath.Abs(filepath.Join("..", "frontend", "dist"))
	if _, err := os.Stat(filepath.Join(dist, "index.html")); err != nil {
		missing("the frontend is not built (no frontend/dist/index.html): run `npm ci && npm run build` in frontend/")
	}
	chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		p, err := exec.LookPath("chromium")
		if err != nil {
			missing("Chromium is not installed: apt-get install chromium")
		}
		chromium = p
	}
	return dist, chromium
}

// observer is installed before any page script runs; it records errors and CSP violations.
const observer = `
window.__errors = [];
window.__csp = [];
addEventListener("error", (e) => __errors.push(String(e.message)));
addEventListener("unhandledrejection", (e) => __errors.push(String(e.reason)));
document.addEventListener("securitypolicyviolation", (e) => __csp.push(e.violatedDirective + " " + e.blockedURI));
`

func TestWindowInChromium(t *testing.T) {
	dist, chromium := prerequisites(t)

	// The Host as `poppydesk` builds it, its services on the bridge.
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Version = testVersion }})
	paths := f.Config.Paths
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := serveWindow(t, ctx, f.Host, dist)

	bctx := windowBrowser(t, ctx, chromium, 1200, 800)
	resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(srv.URL()))
	if err != nil {
		t.Fatalf("opening the window page failed: %v", err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("the page answered HTTP %d", resp.Status)
	}

	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return s
	}
	waitFor := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("waiting for %s (%s): %v", what, expr, err)
		}
	}
	active := func() string { return eval(`document.activeElement ? document.activeElement.id : ""`) }

	// The token was traded for a cookie and removed from the address.
	if u := eval(`location.href`); strings.Contains(u, "token") {
		t.Errorf("the token stayed in the address: %s", u)
	}
	waitFor("the frontend to load its data from Go", `document.body.dataset.ready === "true"`)

	t.Run("CSP is sent, declared and enforced", func(t *testing.T) {
		var header string
		for k, v := range resp.Headers {
			if strings.EqualFold(k, "Content-Security-Policy") {
				header, _ = v.(string)
			}
		}
		if header != webbridge.DefaultCSP {
			t.Errorf("CSP header = %q, want %q", header, webbridge.DefaultCSP)
		}
		meta := eval(`document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content ?? ""`)
		for _, d := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'"} {
			if !strings.Contains(meta, d) {
				t.Errorf("the CSP meta tag lacks %q: %q", d, meta)
			}
		}
		if n := eval(`String(document.querySelectorAll("script:not([src])").length)`); n != "0" {
			t.Errorf("the page has %s inline scripts", n)
		}
		// An inline script must be refused.
		eval(`(() => { window.__inline = "no"; const s = document.createElement("script"); s.textContent = "window.__inline = 'ran'"; document.head.appendChild(s); return ""; })()`)
		waitFor("the CSP violation report", `__csp.some((v) => v.startsWith("script-src"))`)
		if got := eval(`window.__inline`); got != "no" {
			t.Errorf("an inline script ran despite the CSP")
		}
	})

	t.Run("a bound Go method's result is shown", func(t *testing.T) {
		if got := eval(`document.getElementById("app-version").textContent`); got != testVersion {
			t.Errorf("version = %q, want %q (from fronts.Shell.Info)", got, testVersion)
		}
		if want := f.Fronts().Shell.Info().Keyring; want != "connected" {
			t.Errorf("the Host reports the keyring %q, want connected (the fixture's secret store)", want)
		}
		if got := eval(`document.getElementById("keyring").textContent`); got != "Keyring connected" {
			t.Errorf("keyring chip = %q", got)
		}
		waitFor("the readiness report", `document.body.dataset.ready === "true"`)
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(f.Logs.String(), "window frontend ready") {
			if time.Now().After(deadline) {
				t.Fatal("the page never called fronts.Shell.FrontendReady")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("keyboard navigation through every section", func(t *testing.T) {
		run("focus the page", chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`))
		run("Tab", chromedp.KeyEvent(kb.Tab))
		if got := active(); got != "skip-link" {
			t.Fatalf("the first Tab stop is %q, want the skip link", got)
		}
		if v := eval(`getComputedStyle(document.activeElement).outlineStyle`); v == "none" {
			t.Errorf("the focused skip link has no visible focus outline")
		}
		run("Tab", chromedp.KeyEvent(kb.Tab))
		if got := active(); got != "nav-approvals" {
			t.Fatalf("the second Tab stop is %q, want the current section in the rail", got)
		}
		for i, s := range sections {
			if i > 0 {
				run("ArrowDown", chromedp.KeyEvent(kb.ArrowDown))
				if got := active(); got != "nav-"+s.id {
					t.Fatalf("after ArrowDown focus is on %q, want nav-%s", got, s.id)
				}
				run("Enter", chromedp.KeyEvent(kb.Enter))
			}
			waitFor(s.title, `document.getElementById("section-title").textContent === `+jsString(s.title))
			// Views that read from Go (Companies, Sign-in, Inspector) show their empty state once
			// Go has answered that there is nothing yet; Settings shows its sections.
			if s.empty == "" {
				waitFor(s.id+" sections", `document.getElementById("settings-theme") !== null && document.getElementById("info-data") !== null`)
			} else {
				waitFor(s.id+" empty state", `document.getElementById("empty-state") !== null`)
				if got := eval(`document.getElementById("empty-state").textContent`); !strings.Contains(got, s.empty) {
					t.Errorf("%s: empty state %q lacks %q", s.id, got, s.empty)
				}
			}
			if got := eval(`document.getElementById("nav-` + s.id + `").getAttribute("aria-current") || ""`); got != "page" {
				t.Errorf("%s: aria-current = %q", s.id, got)
			}
			if got := eval(`location.hash`); got != "#/"+s.id {
				t.Errorf("%s: hash = %q", s.id, got)
			}
		}
		// Settings shows where the data lives, as Go reported it.
		if got := eval(`document.getElementById("app-facts").textContent`); !strings.Contains(got, paths.Data) {
			t.Errorf("Settings data folder = %q, want %q", got, paths.Data)
		}
		run("ArrowDown wraps", chromedp.KeyEvent(kb.ArrowDown))
		if got := active(); got != "nav-approvals" {
			t.Errorf("ArrowDown from the last entry went to %q, want nav-approvals", got)
		}
		// The skip link moves focus to the content.
		run("focus skip link", chromedp.Focus(chromedp.ID("skip-link")))
		run("Enter on skip link", chromedp.KeyEvent(kb.Enter))
		if got := active(); got != "main" {
			t.Errorf("after the skip link focus is on %q, want main", got)
		}
	})

	t.Run("light and dark themes follow the OS with readable contrast", func(t *testing.T) {
		backgrounds := map[string]string{}
		for _, scheme := range []string{"light", "dark"} {
			if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
			}); err != nil {
				t.Fatal(err)
			}
			run("open Approvals", chromedp.Evaluate[chromedp.Void](`location.hash = "#/approvals"`))
			waitFor("Approvals", `document.getElementById("section-title").textContent === "Approvals"`)
			backgrounds[scheme] = eval(`getComputedStyle(document.body).backgroundColor`)
			got := eval(contrastJS)
			t.Logf("%s theme contrast ratios:\n%s", scheme, got)
			for _, line := range strings.Split(got, "\n") {
				if strings.HasPrefix(line, "LOW ") {
					t.Errorf("%s theme: contrast below WCAG AA: %s", scheme, line)
				}
			}
			if dir := os.Getenv("POPPYDESK_E2E_SCREENSHOTS"); dir != "" {
				for _, sec := range []string{"approvals", "settings"} {
					run("open "+sec, chromedp.Evaluate[chromedp.Void](`location.hash = "#/`+sec+`"`))
					if sec == "settings" {
						waitFor(sec, `document.getElementById("settings-theme") !== null`)
					} else {
						waitFor(sec, `document.getElementById("view-`+sec+`") !== null || document.getElementById("empty-state")?.dataset.section === "`+sec+`"`)
					}
					if png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot()); err == nil {
						_ = os.WriteFile(filepath.Join(dir, "window-"+sec+"-"+scheme+".png"), png, 0o644)
					}
				}
			}
		}
		if backgrounds["light"] == backgrounds["dark"] {
			t.Errorf("the background does not change with prefers-color-scheme (%s)", backgrounds["light"])
		}
		if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("events from Go reach the page", func(t *testing.T) {
		f.Host.Status().Set("Signing in to shop.example")
		waitFor("the status line", `document.getElementById("status").textContent === "Signing in to shop.example"`)
	})

	if errs := eval(`JSON.stringify(__errors)`); errs != "[]" {
		t.Errorf("the page had script errors: %s", errs)
	}
	if v := eval(`JSON.stringify(__csp.filter((v) => !v.startsWith("script-src")))`); v != "[]" {
		t.Errorf("the page's own resources broke the CSP: %s", v)
	}
}

// contrastJS reports the WCAG contrast ratio of the window's text against its background, one
// line per element, prefixed with LOW when it is under 4.5:1 (WCAG 2 AA for normal text).
const contrastJS = `(() => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bg = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const sel of ["#section-title", ".empty-title", ".empty-text", ".brand-name", ".brand-version", "#status", "#keyring", ".rail-link[aria-current]", ".rail-link:not([aria-current])"]) {
    const el = document.querySelector(sel);
    if (!el) { out.push("LOW missing " + sel); continue; }
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    out.push((ratio < 4.5 ? "LOW " : "") + sel + " " + ratio.toFixed(2));
  }
  return out.join("\n");
})()`

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// windowBrowser starts Debian's headless Chromium with the flags every window test uses (a fresh
// profile, no D-Bus), with extra flags if any, and installs the observer before any page script
// runs. The page is a focused window, as the user's window is when they click in it: headless
// Chromium's page otherwise has no focus until the first click gives it one, and that focus
// restarts the approval dialog's guard (the click that brings a window back from elsewhere never
// decides; e2e/realwindow holds that rule in the real window). The browser stops when the test
// ends.
func windowBrowser(t testing.TB, ctx context.Context, chromium string, width, height int, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height), chromedp.Env("DBUS_SESSION_BUS_ADDRESS=disabled:"),
	}, extra...)...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if _, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: observer}); err != nil {
		t.Fatalf("starting Chromium failed: %v", err)
	}
	if _, err := chromedp.Call(bctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatalf("making Chromium's page a focused window failed: %v", err)
	}
	return bctx
}

// serveWindow serves the Host's window services and the built frontend for a browser, exactly as
// `poppydesk window --e2e-listen` does (app/cli/bridge.go): the bridge binds the window's services
// (fronts.New(h).Bindings()) and receives the Host's events through them. It stops when the test
// ends.
func serveWindow(t *testing.T, ctx context.Context, h *app.Host, dist string) *webbridge.Server {
	t.Helper()
	srv, stop := startWindowServer(t, ctx, h, dist)
	t.Cleanup(stop)
	return srv
}

// startWindowServer is serveWindow without the cleanup: stop detaches the bridge from the Host's
// events and closes it.
func startWindowServer(tb testing.TB, ctx context.Context, h *app.Host, dist string) (srv *webbridge.Server, stop func()) {
	tb.Helper()
	window := fronts.New(h)
	srv, err := webbridge.Start(ctx, "127.0.0.1:0", webbridge.Config{Assets: os.DirFS(dist), Bind: window.Bindings(), Log: h.Logger()})
	if err != nil {
		tb.Fatal(err)
	}
	detach := window.Attach(srv)
	return srv, func() { detach(); srv.Close() }
}
