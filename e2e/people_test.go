package e2e

// The window speaks to people: what a new user sees before Poppydesk can act (the first-run
// screen, the keyring in words), that nothing waits unseen (the Sign-in badge, notifications only
// while the window is in the background, status messages that expire), Settings (theme,
// notifications, Reset everything), and the demo's account and Reset demo. Each runs the Host as
// `poppydesk` builds it (apptest), its services on the browser-testable bridge, in Chromium.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// windowPage is one window in Chromium over a Host.
type windowPage struct {
	t    *testing.T
	bctx context.Context
}

func openWindowPage(t *testing.T, h *app.Host) *windowPage {
	t.Helper()
	dist, chromium := prerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	srv := serveWindow(t, ctx, h, dist)
	bctx := windowBrowser(t, ctx, chromium, 1200, 860)
	if _, err := chromedp.Run(bctx, chromedp.NavigateResponse(srv.URL())); err != nil {
		t.Fatalf("opening the window page failed: %v", err)
	}
	p := &windowPage{t: t, bctx: bctx}
	p.waitFor("the window to load", `document.body.dataset.ready === "true"`, 10*time.Second)
	return p
}

func (p *windowPage) eval(expr string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.bctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

func (p *windowPage) waitFor(what, expr string, timeout time.Duration) {
	p.t.Helper()
	if _, err := chromedp.Run(p.bctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		page, _ := chromedp.Run(p.bctx, chromedp.Evaluate[string](`document.querySelector("main")?.innerText.slice(0, 400) ?? ""`))
		p.t.Fatalf("waiting for %s (%s): %v; the page shows: %s", what, expr, err, page)
	}
}

func (p *windowPage) click(sel string) {
	p.t.Helper()
	var err error
	for range 20 {
		if err = chromedp.Do(p.bctx, chromedp.Click(chromedp.CSS(sel))); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("clicking %s: %v", sel, err)
	}
}

func (p *windowPage) clean() {
	p.t.Helper()
	if errs := p.eval(`JSON.stringify(__errors)`); errs != "[]" {
		p.t.Errorf("the page had script errors: %s", errs)
	}
	if v := p.eval(`JSON.stringify(__csp)`); v != "[]" {
		p.t.Errorf("CSP violations: %s", v)
	}
}

func (p *windowPage) shot(name string) {
	if png, err := chromedp.Run(p.bctx, chromedp.FullScreenshot(90)); err == nil {
		if err := os.MkdirAll("../out", 0o755); err == nil {
			_ = os.WriteFile("../out/"+name+".png", png, 0o644)
		}
	}
}

// TestFirstRunInChromium: without an identity, in a build that names no default operator, the
// window leads somewhere: a guided screen that says no operator is named, with the four other
// ways to start, what each needs and their exact steps, the idle status saying so, and a link to
// developer mode in Settings.
func TestFirstRunInChromium(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.ClientID, c.Developer = "", app.Developer{} }})
	if p := f.Host.Problem(); p == nil || p.Kind != app.ProblemNoIdentity {
		t.Fatalf("Problem = %+v, want no_identity", p)
	}
	p := openWindowPage(t, f.Host)
	p.waitFor("the first-run screen", `!!document.getElementById("firstrun")`, 10*time.Second)
	if got := p.eval(`document.getElementById("section-title").textContent`); got != "Welcome to Poppydesk" {
		t.Errorf("title = %q", got)
	}
	ways := p.eval(`Array.from(document.querySelectorAll(".firstrun-way h2")).map((h) => h.textContent).join("|")`)
	if ways != "Use another operator|Publish your own identity|Try the demo|Develop a Company" {
		t.Errorf("ways = %q", ways)
	}
	if lead := p.eval(`document.getElementById("firstrun-lead").textContent`); !strings.Contains(lead, "names no operator to get one from in one click") {
		t.Errorf("the lead does not say what is missing: %q", lead)
	}
	if needs := p.eval(`String(document.querySelectorAll(".firstrun-needs").length)`); needs != "4" {
		t.Errorf("%s ways say what they need, want 4", needs)
	}
	cmds := p.eval(`Array.from(document.querySelectorAll("#firstrun code.cmd")).map((c) => c.textContent).join("|")`)
	for _, want := range []string{"poppydesk identity export --client-id", "poppydesk operator enroll https://operator.example --token TOKEN"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("the steps lack %q: %s", want, cmds)
		}
	}
	if got := p.eval(`document.getElementById("status").textContent`); got != "Not set up yet: choose how to start" {
		t.Errorf("status line = %q (not a truncated problem text)", got)
	}
	p.eval(`location.hash = "#/companies"; "ok"`)
	p.waitFor("the first-run screen on Companies too", `document.getElementById("nav-companies").getAttribute("aria-current") === "page" && !!document.getElementById("firstrun")`, 5*time.Second)
	p.shot("first-run")
	p.click("#firstrun-developer-link")
	p.waitFor("Settings", `location.hash === "#/settings" && !!document.getElementById("info-identity")`, 5*time.Second)
	if got := p.eval(`document.getElementById("info-identity").textContent`); !strings.HasPrefix(got, "None yet") {
		t.Errorf("Settings identity = %q", got)
	}
	p.clean()
}

// TestKeyringInWordsInChromium: the header chip and Settings say what is true of the system
// keyring. The Host is built as `poppydesk` builds it, with the real keyring: where no Secret
// Service answers (or it is locked), the chip and Settings say so and the sections that need it
// explain what to do; where one answers (scripts/with-keyring.sh), they say it is connected. The
// frontend's tests cover every wording.
func TestKeyringInWordsInChromium(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "disabled:")
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Secrets, c.KeyringService = nil, "poppydesk-e2e-words" }})
	p := openWindowPage(t, f.Host)
	chip := p.eval(`document.getElementById("keyring").textContent + " " + document.getElementById("keyring").dataset.state`)
	p.eval(`location.hash = "#/settings"; "ok"`)
	p.waitFor("Settings", `!!document.getElementById("info-keyring")`, 5*time.Second)
	settings := p.eval(`document.getElementById("info-keyring").textContent`)
	switch pr := f.Host.Problem(); {
	case pr == nil:
		if chip != "Keyring connected ok" || !strings.HasPrefix(settings, "Connected:") {
			t.Errorf("with a Secret Service: chip %q, Settings %q", chip, settings)
		}
	case pr.Kind == app.ProblemNoKeyring:
		if chip != "No keyring warn" || !strings.HasPrefix(settings, "Not available: no Secret Service answers") {
			t.Errorf("without a Secret Service: chip %q, Settings %q", chip, settings)
		}
		p.eval(`location.hash = "#/approvals"; "ok"`)
		p.waitFor("the keyring screen", `document.getElementById("firstrun-keyring-title")?.textContent === "No system keyring is available"`, 5*time.Second)
	case pr.Kind == app.ProblemKeyringLocked:
		if chip != "Keyring locked warn" || !strings.HasPrefix(settings, "Locked:") {
			t.Errorf("with a locked keyring: chip %q, Settings %q", chip, settings)
		}
		p.eval(`location.hash = "#/approvals"; "ok"`)
		p.waitFor("the keyring screen", `document.getElementById("firstrun-keyring-title")?.textContent === "The system keyring is locked"`, 5*time.Second)
	default:
		t.Fatalf("Problem = %+v", pr)
	}
	p.clean()
}

// TestNothingWaitsUnseenInChromium: a sign-in the model asks for gets the Sign-in badge; a
// desktop notification comes only while the window is in the background; a status message gives
// way to "Ready" by itself.
func TestNothingWaitsUnseenInChromium(t *testing.T) {
	notes := make(chan [2]string, 8)
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Notifier = app.NotifierFunc(func(title, body string) { notes <- [2]string{title, body} })
	}})
	co := f.Discover(t)
	p := openWindowPage(t, f.Host)
	ask := func(scope string) {
		t.Helper()
		if _, err := f.Host.SignInRequests().Add(context.Background(), modelapi.SignInRequest{Company: co.Identifier, CompanyName: co.Organization.Name,
			Domain: co.Organization.Domain, Scopes: []string{scope}, ModelReason: "to read your orders", Requested: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// The window reports its focus to Go (Shell.WindowFocus) on focus and blur events.
	reported := func(focused string) {
		t.Helper()
		want := `"msg":"the window reported its focus","focused":` + focused
		n := strings.Count(f.Logs.String(), want)
		p.eval(map[string]string{"true": `window.dispatchEvent(new Event("focus")); "ok"`, "false": `window.dispatchEvent(new Event("blur")); "ok"`}[focused])
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(f.Logs.String(), want) == n {
			if time.Now().After(deadline) {
				t.Fatalf("the window's focus report (%s) did not reach Go", focused)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The window reports its focus once when it is ready (the headless page has none); that
	// report must be in before the test's own, or it could land after it.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(f.Logs.String(), `"msg":"the window reported its focus"`) {
		if time.Now().After(deadline) {
			t.Fatal("the window did not report its focus when it was ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reported("true")
	ask("orders:read")
	p.waitFor("the Sign-in badge", `document.querySelector("#nav-signin .badge").textContent === "1" && !document.querySelector("#nav-signin .badge").hidden`, 5*time.Second)
	if got := p.eval(`document.getElementById("nav-signin").getAttribute("aria-label")`); got != "Sign-in, 1 waiting" {
		t.Errorf("aria-label = %q", got)
	}
	select {
	case n := <-notes:
		t.Errorf("a notification while the window has the focus: %q", n)
	case <-time.After(300 * time.Millisecond):
	}
	reported("false")
	ids, _ := f.Host.SignInRequests().List(context.Background())
	for _, r := range ids {
		_ = f.Host.SignInRequests().Dismiss(context.Background(), r.ID)
	}
	ask("orders:write")
	select {
	case n := <-notes:
		if n[0] != "Sign-in requested: "+co.Organization.Name {
			t.Errorf("notification = %q", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification for a sign-in request while the window is in the background")
	}

	f.Host.Status().Set("Signed in to the Shop")
	p.waitFor("the message", `document.getElementById("status").textContent === "Signed in to the Shop"`, 5*time.Second)
	p.waitFor("the message to expire", `document.getElementById("status").textContent === "Ready"`, 15*time.Second)
	p.clean()
}

// TestSettingsInChromium: the theme chosen in Settings applies at once and is kept by Go;
// notifications turn off; Reset everything asks first, then deletes everything and says to
// start again.
func TestSettingsInChromium(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read")
	p := openWindowPage(t, f.Host)
	p.eval(`location.hash = "#/settings"; "ok"`)
	p.waitFor("Settings", `!!document.getElementById("theme-dark")`, 5*time.Second)
	if got := p.eval(`Array.from(document.querySelectorAll("main h1, main h2")).map((h) => h.textContent).join("|")`); got != "Settings|Appearance|Notifications|Reports to Companies|Developer mode|Identity|This installation|Reset everything" {
		t.Errorf("headings = %q", got)
	}
	p.click("#theme-dark")
	p.waitFor("the dark theme", `document.documentElement.dataset.theme === "dark"`, 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for f.Fronts().Shell.Preferences().Theme != "dark" {
		if time.Now().After(deadline) {
			t.Fatal("the theme was not saved")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bg := p.eval(`getComputedStyle(document.body).backgroundColor`); bg != "rgb(21, 23, 26)" {
		t.Errorf("dark background = %s", bg)
	}
	p.shot("settings-dark")
	p.click("#notifications-on")
	deadline = time.Now().Add(10 * time.Second)
	for f.Fronts().Shell.Preferences().Notifications {
		if time.Now().After(deadline) {
			t.Fatal("notifications stayed on")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.waitFor("the reports setting", `document.getElementById("reports-on").checked && !document.getElementById("reports-on").disabled`, 5*time.Second)
	p.click("#reports-on")
	deadline = time.Now().Add(10 * time.Second)
	for on, _ := f.Host.FeedbackReportsEnabled(context.Background()); on; on, _ = f.Host.FeedbackReportsEnabled(context.Background()) {
		if time.Now().After(deadline) {
			t.Fatal("reports to Companies stayed on")
		}
		time.Sleep(20 * time.Millisecond)
	}
	state := f.Fronts().Shell.Info().StateFile
	p.click("#reset-start")
	p.waitFor("the confirmation", `!!document.getElementById("reset-confirm")`, 5*time.Second)
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("the first click deleted something: %v", err)
	}
	p.click("#reset-confirm")
	p.waitFor("the reset", `document.getElementById("reset-note").textContent.includes("start it again")`, 15*time.Second)
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state database is still there: %v", err)
	}
	if !f.Fronts().Shell.Info().Reset {
		t.Error("the Host was not reset")
	}
	p.clean()
}

// TestDemoAccountAndResetInChromium: the demo's account is a signed-in account on Companies that
// can be signed out; Reset demo restores the reference Company so the exchange can be done again.
func TestDemoAccountAndResetInChromium(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Demo: true})
	p := openWindowPage(t, f.Host)
	p.eval(`location.hash = "#/companies"; "ok"`)
	p.waitFor("the demo account", `(document.querySelector(".co-account")?.textContent ?? "").startsWith("acct_demo (the demo’s account): ")`, 10*time.Second)
	if got := p.eval(`document.querySelector(".co-account span").textContent`); !strings.Contains(got, "(orders:write)") || strings.Contains(got, ": orders:write") {
		t.Errorf("the scopes have no words beside them: %q", got)
	}
	p.click(".co-account button")
	p.click(".co-account button[id$='-yes']")
	p.waitFor("signed out", `document.querySelector(".co-card")?.textContent.includes("Not signed in.")`, 10*time.Second)

	// Reset demo signs it in again and clears what the Company performed.
	a := f.Fronts().Approvals
	p.eval(`location.hash = "#/approvals"; "ok"`)
	p.waitFor("the demo card", `!!document.getElementById("demo-reset")`, 10*time.Second)
	p.click("#demo-reset")
	p.waitFor("the reset", `document.getElementById("demo-reset-note").textContent.startsWith("The demo is as it was at start")`, 30*time.Second)
	if _, err := a.StartDemoExchange("api"); err != nil {
		t.Fatal(err)
	}
	p.waitFor("the dialog", dialogOpen, 10*time.Second)
	p.waitFor("the end of the guard", guardOver, 5*time.Second)
	p.click("#approve-button")
	p.waitFor("the result", `(document.getElementById("result-status")?.textContent ?? "").endsWith("performed what you approved.")`, 30*time.Second)
	if n := len(f.Company.Ledger()); n != 1 {
		t.Fatalf("ledger = %d", n)
	}
	p.click("#close-button")
	p.waitFor("the dialog to close", `!document.getElementById("approval-overlay")`, 5*time.Second)
	p.click("#demo-reset")
	deadline := time.Now().Add(30 * time.Second)
	for len(f.Company.Ledger()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after Reset demo the ledger has %d entries", len(f.Company.Ledger()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.waitFor("the second reset", `document.getElementById("demo-reset-note").textContent.startsWith("The demo is as it was at start")`, 30*time.Second)
	if _, err := a.StartDemoExchange("api"); err != nil {
		t.Fatalf("the exchange cannot be asked for again after Reset demo: %v", err)
	}
	p.waitFor("a new dialog", dialogOpen+` && document.getElementById("approval-kicker").textContent === "Your approval is needed"`, 10*time.Second)
	p.click("#close-button")

	// One button style system everywhere, and no section repeats its own heading.
	loaded := map[string]string{ // what each section shows once Go has answered
		"approvals": "#demo-reset", "companies": ".co-card", "signin": "#empty-state, .si-card", "conversations": "#conv-company option",
		"browser": "#empty-state, .browser-body p", "settings": "#info-identity",
	}
	for _, sec := range []string{"approvals", "companies", "signin", "conversations", "browser", "settings"} {
		p.eval(`location.hash = "#/` + sec + `"; "ok"`)
		p.waitFor(sec, `document.getElementById("nav-`+sec+`").getAttribute("aria-current") === "page" && document.querySelector("main `+loaded[sec]+`") !== null`, 10*time.Second)
		if got := p.eval(`Array.from(document.querySelectorAll("main button:not(.btn):not(.approval-row):not(.conv-item)")).map((b) => b.id || b.textContent).join("|")`); got != "" {
			t.Errorf("%s: buttons outside the button system: %s", sec, got)
		}
		if got := p.eval(`(() => { const h = document.getElementById("section-title").textContent; return Array.from(document.querySelectorAll("main h2, main h3")).filter((x) => x.textContent === h).map((x) => x.textContent).join("|"); })()`); got != "" {
			t.Errorf("%s: the heading is repeated: %s", sec, got)
		}
	}
	p.clean()
}
