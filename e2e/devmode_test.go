package e2e

// Developer mode end to end (spec 4.1 client metadata, 5.2 Direct Sign-In; docs/DEVELOPERS.md):
// the reference Company runs as a separate process, `poppydesk company serve`, with its own CA,
// as a developer's Company would; Poppydesk is built by app.New with developer mode naming it,
// serves its own client metadata on loopback with its own CA (which the Company trusts through
// --agent-ca), and its window runs on the browser-testable bridge in Chromium, where the
// developer discovers the Company, signs in with Direct Sign-In (the consent page answered in a
// Chromium tab), and approves an operation the model asked for; the Inspector then shows the
// exchanges with their JWTs decoded and redacted.

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// companyProcess is `poppydesk company serve` running as a child process, with what it printed
// at start (the fields of its JSON line a developer reads).
type companyProcess struct {
	Domain string `json:"domain"`
	Listen string `json:"listen"`
	Issuer string `json:"issuer"`
	CACert string `json:"ca_cert"`

	cmd    *exec.Cmd
	stderr *apptest.Buffer
	done   chan error
}

// buildPoppydesk builds the module's main package, as `go build` does for a developer, into a
// folder of the test.
func buildPoppydesk(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "poppydesk")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of poppydesk failed: %v\n%s", err, out)
	}
	return bin
}

// startCompanyProcess runs `poppydesk company serve` with args and waits (up to 60 s) for its JSON
// line. The process is stopped (SIGTERM, then killed after 15 s) when the test ends.
func startCompanyProcess(t *testing.T, bin string, args ...string) *companyProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"company", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &companyProcess{cmd: cmd, stderr: &apptest.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting poppydesk company serve: %v", err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { c.stop(t) })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), c); err != nil || c.Domain == "" || c.CACert == "" {
			t.Fatalf("poppydesk company serve printed %q (%v); stderr:\n%s", line, err, c.stderr.String())
		}
	case err := <-c.done:
		t.Fatalf("poppydesk company serve exited at start (%v); stderr:\n%s", err, c.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("poppydesk company serve printed nothing within 60 s; stderr:\n%s", c.stderr.String())
	}
	return c
}

// stop ends the process as a developer's Ctrl-C would, and reports an unclean exit.
func (c *companyProcess) stop(t *testing.T) {
	if c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		c.done <- err // stop may run again
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) || exit != nil && exit.ExitCode() != 0 {
			t.Errorf("poppydesk company serve ended with %v; stderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		t.Errorf("poppydesk company serve did not stop within 15 s of SIGTERM")
	}
}

// TestDeveloperModeAgainstCompanyProcess follows docs/DEVELOPERS.md with the reference Company
// as the developer's Company, in its own process: Poppydesk starts in developer mode once and
// shows the CA file of its client metadata in Settings; the Company starts trusting it
// (--agent-ca) and prints its domain and its own CA file; the developer names both in Settings →
// Developer mode and restarts Poppydesk. Then, in the window in Chromium: Companies → Discover by
// the domain, Direct Sign-In with the consent page answered in a Chromium tab (the Company
// fetches Poppydesk's client_id over TLS from Poppydesk's CA), an API call and an operation the
// model asks for over MCP, Approve in the window's dialog, and the Inspector listing those
// exchanges and showing the approved one's Session JWT and delegation decoded, the User ID
// hidden, with no compact JWT in the page.
func TestDeveloperModeAgainstCompanyProcess(t *testing.T) {
	dist, chromium := prerequisites(t)
	bin := buildPoppydesk(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	t.Cleanup(cancel)

	// The first start in developer mode (as `poppydesk window --dev-company shop.localhost`
	// would): Poppydesk makes the CA of its client metadata, shown in Settings.
	first, err := app.DeveloperFrom(app.DeveloperSettings{Companies: []string{"shop.localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	var user context.Context       // the User's browser tab, the Host's opener (set below)
	opened := make(chan string, 4) // the URLs the opener loaded in the User's tab
	f := apptest.Start(t, apptest.Options{NoCompany: true, Edit: func(c *app.Config) {
		c.ClientID, c.Developer = "", first
		c.Opener = app.OpenerFunc(func(u string) error {
			err := chromedp.Do(user, chromedp.Navigate(u)) // returns once the page has loaded
			opened <- u
			return err
		})
	}})
	settings := f.Fronts().Settings
	view, err := settings.View()
	if err != nil {
		t.Fatal(err)
	}
	agentCA := view.Developer.AgentCAFile
	if agentCA == "" || view.Developer.ClientID == "" {
		t.Fatalf("Settings → Developer mode shows no client_id or CA file to trust: %+v", view.Developer)
	}

	// The developer's Company, trusting Poppydesk's CA for the client metadata.
	co := startCompanyProcess(t, bin, "--agent-ca", agentCA)
	t.Logf("the Company process: %s on %s, its CA %s", co.Domain, co.Listen, co.CACert)

	// Settings → Developer mode names it and its CA; the next start applies it.
	view, err = settings.SetDeveloper([]string{co.Domain}, co.CACert)
	if err != nil {
		t.Fatalf("Settings refused the Company process's domain and CA: %v", err)
	}
	if !view.Developer.RestartNeeded {
		t.Errorf("Settings does not say a restart is needed: %+v", view.Developer)
	}
	f.Config.Developer = app.Developer{} // restarted without --dev-company: the saved settings apply
	f.Restart(t)
	if view, err = f.Fronts().Settings.View(); err != nil || !view.Developer.Active || len(view.Developer.Companies) != 1 ||
		view.Developer.Companies[0] != co.Domain || view.Developer.CAFile != co.CACert || view.Developer.AgentCAFile != agentCA {
		t.Fatalf("after the restart developer mode is %+v (%v), want %s with %s and the same agent CA", view.Developer, err, co.Domain, co.CACert)
	}

	// One Chromium, trusting exactly the Company process's key: the window in one tab, the
	// User's browser in another.
	pem, err := os.ReadFile(co.CACert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("the Company's CA file %s holds no certificate", co.CACert)
	}
	bctx := windowBrowser(t, ctx, chromium, 1200, 860, chromedp.Flag("ignore-certificate-errors-spki-list", leafSPKIAt(t, co.Listen, roots)))
	tab, closeTab := chromedp.NewContext(bctx)
	t.Cleanup(closeTab)
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	user = tab
	srv := serveWindow(t, ctx, f.Host, dist)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL())); err != nil {
		t.Fatalf("opening the window page failed: %v", err)
	}
	w := &approvalWorld{t: t, bctx: bctx, logs: f.Logs}
	w.waitFor("the window to load", `document.body.dataset.ready === "true"`, 10*time.Second)
	if got := w.eval(`document.body.innerText`); !strings.Contains(got, co.Domain) {
		t.Errorf("the window's developer-mode badge does not name %s:\n%.600s", co.Domain, got)
	}

	// Companies → Discover, by the domain the Company printed.
	w.do("open Companies", chromedp.Evaluate[chromedp.Void](`location.hash = "#/companies"`))
	w.waitFor("the discovery form", `!!document.getElementById("co-domain")`, 10*time.Second)
	w.do("type the domain", chromedp.SendKeys("#co-domain", co.Domain))
	w.do("click Discover", chromedp.Click(chromedp.ID("co-discover")))
	w.waitFor("discovery to finish", `!document.getElementById("co-discover").disabled && !document.getElementById("co-message").textContent.startsWith("Verifying")`, 30*time.Second)
	if msg := w.eval(`document.getElementById("co-message").textContent`); !strings.HasPrefix(msg, "Verified: ") {
		t.Fatalf("discovering %s in developer mode failed; the window says: %s", co.Domain, msg)
	}

	// Direct Sign-In: the window's plan, then the Company's consent page in the User's tab.
	w.waitFor("the Company in the list", `!!document.querySelector(".co-card [data-action=signin]")`, 10*time.Second)
	w.do("click Sign in…", chromedp.Click(chromedp.CSS(".co-card [data-action=signin]")))
	w.waitFor("the sign-in plan", `!!document.querySelector("#si-plan #si-scopes input")`, 10*time.Second)
	// The operation needs orders:write, which the plan does not tick by itself.
	if w.eval(`String(document.querySelector('#si-scopes input[value="orders:write"]').checked)`) != "true" {
		w.do("tick orders:write", chromedp.Click(chromedp.CSS(`#si-scopes input[value="orders:write"]`)))
	}
	w.do("click Sign in in your browser", chromedp.Click(chromedp.ID("si-direct")))
	select {
	case u := <-opened:
		if !strings.HasPrefix(u, co.Issuer+"/") {
			t.Errorf("the opener was given %s, not the Company process's issuer %s", u, co.Issuer)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the browser was never opened for the sign-in, or the page did not load within 30 s; the window says: %s", w.eval(`document.getElementById("main").innerText`))
	}
	// The Company fetches Poppydesk's client metadata before it shows the consent page; it
	// shows an error page instead when it cannot (when it does not trust Poppydesk's CA, say).
	if page, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("approve") ? "" : document.body.innerText`)); err != nil {
		t.Fatalf("reading the User's tab: %v", err)
	} else if page != "" {
		t.Fatalf("the Company shows no consent page but:\n%s\nthe Company process's log:\n%s", page, co.stderr.String())
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("approve"))); err != nil {
		t.Fatal(err)
	}
	w.waitFor("the sign-in to end", `["succeeded", "failed", "expired", "cancelled"].includes(document.querySelector("#si-flow")?.dataset.state)`, 30*time.Second)
	if state := w.eval(`document.querySelector("#si-flow").dataset.state`); state != "succeeded" {
		t.Fatalf("the Direct Sign-In ended %s; the window says: %s\nthe Company process's log:\n%s", state, w.eval(`document.getElementById("si-flow").innerText`), co.stderr.String())
	}

	if got := w.eval(`[...document.querySelectorAll("#si-granted .si-scope")].map(e => e.dataset.scope).join(" ")`); got != "orders:read orders:write" {
		t.Errorf("granted scopes = %q, want orders:read orders:write", got)
	}

	// The model: an API call, then an operation that needs the User's approval.
	cs := f.Model(t, "e2e")
	call := func(tool string, args map[string]any, want string) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if sc["status"] != want {
			t.Fatalf("%s returned %v, want status %s: %s", tool, sc["status"], want, toolText(res))
		}
		return sc
	}
	call("call_api_operation", map[string]any{"company": co.Domain, "operation_id": "listOrders"}, "performed")
	call("call_api_operation", map[string]any{"company": co.Domain, "operation_id": "exchangeItem", "path_params": map[string]any{"id": "ord_7Hk2"},
		"body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}}, "waiting_for_user")

	// Approve in the window's dialog, once its guard is over.
	w.waitFor("the approval dialog", dialogOpen, 10*time.Second)
	if got := w.eval(`document.getElementById("approval-domain").textContent`); got != co.Domain {
		t.Errorf("the dialog names %q, want the Company process's %s", got, co.Domain)
	}
	w.waitFor("the end of the guard", guardOver, 5*time.Second)
	w.do("click Approve", chromedp.Click(chromedp.ID("approve-button")))
	w.waitFor("the Company's result", `!!document.getElementById("result-body")`, 30*time.Second)

	// The Inspector lists the exchanges with the Company process and their causes.
	w.openInspector()
	w.waitFor("the approved request on the timeline", `[...document.querySelectorAll("#insp-list .insp-open")].some(b => b.querySelector(".insp-status").textContent === "201")`, 10*time.Second)
	rows := w.eval(`[...document.querySelectorAll("#insp-list .insp-open")].map(b => [".insp-status", ".insp-method", ".insp-url", ".insp-meta"].map(s => b.querySelector(s).textContent).join(" ")).join("\n")`)
	api := "200 GET " + co.Domain + "/api/orders " // the model's API call
	for _, want := range []string{
		api,
		"403 POST " + co.Domain + "/api/orders/ord_7Hk2/exchanges", // approval_required
		"201 POST " + co.Domain + "/api/orders/ord_7Hk2/exchanges", // the approved request
		"200 POST auth." + co.Domain + "/oauth/token",              // the sign-in's code exchange
		"200 GET " + co.Domain + "/.well-known/poppy.json",         // discovery
	} {
		if !strings.Contains(rows, want) {
			t.Errorf("the Inspector does not list %q:\n%s", want, rows)
		}
	}
	for _, line := range strings.Split(rows, "\n") {
		if strings.HasPrefix(line, api) && !strings.HasSuffix(line, "model: call_api_operation") {
			t.Errorf("the API call is not shown as the model's: %s", line)
		}
	}
	w.checkApprovedExchange()
	if errs := w.eval(`JSON.stringify([window.__errors, window.__csp])`); errs != "[[],[]]" {
		t.Errorf("the window had script errors or CSP violations: %s", errs)
	}
}
