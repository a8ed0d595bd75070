package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// signInWorld is the reference Company, the Host as `poppydesk` builds it (apptest) with its
// window services on the bridge, the window in one headless Chromium and the User's browser in
// another: the Host's opener only navigates the User's browser, and the test answers the
// consent page there as a person would.
type signInWorld struct {
	f       *apptest.Fixture
	s       *refcompany.Server
	e       *engine.Engine
	co      *discovery.Company
	secrets store.Secrets
	reqs    *modelapi.MemorySignInRequests
	window  context.Context // the Poppydesk window
	user    context.Context // the User's own browser
	opened  chan string
	shots   string
}

func newSignInWorld(t *testing.T) *signInWorld {
	dist, chromium := prerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	w := &signInWorld{opened: make(chan string, 4)}

	// The desktop opener, played by the User's browser (started below, once the Company's key
	// is known): it only navigates.
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Version = testVersion
		c.Opener = app.OpenerFunc(func(u string) error {
			w.opened <- u
			return chromedp.Do(w.user, chromedp.Navigate(u))
		})
	}})
	w.f, w.s, w.e, w.secrets, w.reqs = f, f.Company, f.Host.Engine(), f.Host.Secrets(), f.Host.SignInRequests()
	w.co = f.Discover(t)

	// Two Chromiums: the window, and the User's browser (which trusts exactly the reference
	// Company's key, like the demo does).
	spki := leafSPKI(t, w.s)
	newBrowser := func(extra ...chromedp.ExecAllocatorOption) context.Context {
		opts := append([]chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 1000), chromedp.Env("DBUS_SESSION_BUS_ADDRESS=disabled:"),
		}, extra...)
		actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
		bctx, cancelB := chromedp.NewContext(actx)
		t.Cleanup(func() { cancelB(); cancelA() })
		if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatalf("starting Chromium: %v", err)
		}
		return bctx
	}
	w.window = newBrowser()
	w.user = newBrowser(chromedp.Flag("ignore-certificate-errors-spki-list", spki))

	srv := serveWindow(t, ctx, f.Host, dist)
	if _, err := chromedp.Call(w.window, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: observer}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(w.window, chromedp.Navigate(srv.URL())); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, w.window, "the window to load", `document.body.dataset.ready === "true"`)
	w.shots, _ = filepath.Abs(filepath.Join("..", "out"))
	_ = os.MkdirAll(w.shots, 0o755)
	return w
}

// leafSPKI is the base64 SHA-256 of the reference Company's certificate key, for Chromium's
// ignore-certificate-errors-spki-list (a browser that trusts exactly that key).
func leafSPKI(t *testing.T, s *refcompany.Server) string {
	return leafSPKIAt(t, "127.0.0.1:"+strconv.Itoa(s.Port), s.CA().Pool())
}

// leafSPKIAt is leafSPKI for a reference Company at addr whose CA is roots (one running in
// another process).
func leafSPKIAt(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: refcompany.AuthHost, RootCAs: roots})
	if err != nil {
		t.Fatalf("reading the Company's certificate at %s: %v", addr, err)
	}
	defer conn.Close()
	sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func (w *signInWorld) waitFor(t *testing.T, b context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(b, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		text, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, text)
	}
}

func (w *signInWorld) eval(t *testing.T, b context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(b, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// click clicks like a person (trusted input events through CDP), as the buttons require.
func (w *signInWorld) click(t *testing.T, b context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("clicking %s: %v", sel, err)
	}
}

func (w *signInWorld) shot(t *testing.T, name string) {
	t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(w.window, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}}}); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(w.window, chromedp.Evaluate[chromedp.Void](`document.getElementById("main").scrollTop = 0; window.scrollTo(0, 0)`)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(w.window, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		file := "signin-" + name + ".png"
		if scheme == "dark" {
			file = "signin-" + name + "-dark.png"
		}
		if err := os.WriteFile(filepath.Join(w.shots, file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := chromedp.Call(w.window, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
}

func (w *signInWorld) tokens(t *testing.T, account string) store.Token {
	t.Helper()
	b, err := w.secrets.LoadCompany(context.Background(), w.co.Identifier, account)
	if errors.Is(err, store.ErrNotFound) {
		return store.Token{}
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range b.Tokens {
		if tok.Resource == "" {
			return tok
		}
	}
	return store.Token{}
}

// openPlan goes from Companies to the Sign-in screen of the reference Company, as a person would.
func (w *signInWorld) openPlan(t *testing.T) {
	t.Helper()
	if err := chromedp.Do(w.window, chromedp.Evaluate[chromedp.Void](`location.hash = "#/companies"`)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, w.window, "the Company in the list", `!!document.querySelector(".co-card [data-action=signin]")`)
	w.click(t, w.window, ".co-card [data-action=signin]")
	w.waitFor(t, w.window, "the sign-in plan", `!!document.querySelector("#si-plan #si-scopes input")`)
}

// TestSignInDirectInChromium: the User clicks "Sign in in your browser" in the window; the
// opener loads the Company's consent page in the User's browser; the User unticks orders:write
// and approves; the window shows the granted scope, and the tokens are in the secret store.
// The model's request is shown with its words marked as the model's, and starts nothing.
func TestSignInDirectInChromium(t *testing.T) {
	w := newSignInWorld(t)
	ctx := context.Background()

	// The model asks (agentcore/modelapi); nothing starts until the User clicks.
	if _, err := w.reqs.Add(ctx, modelapi.SignInRequest{Company: w.co.Identifier, CompanyName: w.co.Organization.Name, Domain: w.co.Organization.Domain,
		Scopes: []string{"orders:read", "orders:write"}, ModelReason: "I need to see your orders to exchange the jacket.", Requested: w.f.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(w.window, chromedp.Evaluate[chromedp.Void](`location.hash = "#/signin"`)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, w.window, "the model's request", `!!document.querySelector(".si-request .si-model")`)
	if got := w.eval(t, w.window, `document.querySelector(".si-request .si-model").textContent`); !strings.Contains(got, "Your agent says:") || !strings.Contains(got, "exchange the jacket") {
		t.Errorf("the model's reason is not marked as its words: %q", got)
	}
	select {
	case u := <-w.opened:
		t.Fatalf("a browser was opened before any click: %s", u)
	default:
	}
	w.shot(t, "request")
	w.click(t, w.window, ".si-request .btn-primary")
	w.waitFor(t, w.window, "the plan", `!!document.querySelector("#si-plan #si-scopes input")`)
	if got := w.eval(t, w.window, `document.getElementById("si-company-name").textContent`); got != w.co.Organization.Name {
		t.Errorf("company name = %q, want the verified %q", got, w.co.Organization.Name)
	}
	if got := w.eval(t, w.window, `[...document.querySelectorAll("#si-scopes .si-scope")].map(e => e.dataset.scope + "=" + e.dataset.changes).join(" ")`); got == "" {
		t.Error("no scopes shown")
	} else {
		t.Logf("scopes with hints: %s", got)
	}
	w.shot(t, "plan")

	w.click(t, w.window, "#si-direct")
	var authURL string
	select {
	case authURL = <-w.opened:
	case <-time.After(20 * time.Second):
		t.Fatal("the opener was never called")
	}
	if !strings.HasPrefix(authURL, w.s.Issuer()+"/oauth/authorize?") {
		t.Errorf("opened %q, want the Company's authorization endpoint", authURL)
	}
	w.waitFor(t, w.window, "the waiting screen", `document.querySelector("#si-flow")?.dataset.state === "waiting"`)
	if got := w.eval(t, w.window, `document.getElementById("si-flow-title").textContent`); got != "Waiting for you to finish in your browser…" {
		t.Errorf("waiting title = %q", got)
	}
	c1 := w.eval(t, w.window, `document.getElementById("si-countdown").textContent`)
	w.shot(t, "waiting-direct")

	// The User, in their own browser, unticks orders:write and approves.
	if err := chromedp.Do(w.user, chromedp.WaitVisible(chromedp.CSS("#approve"))); err != nil {
		t.Fatalf("the consent page did not load: %v", err)
	}
	if err := chromedp.Do(w.user, chromedp.Click(chromedp.CSS(`#scope-orders\:write`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(w.user, chromedp.Click(chromedp.CSS("#approve"))); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, w.window, "the success screen", `document.querySelector("#si-flow")?.dataset.state === "succeeded"`)
	c2 := w.eval(t, w.window, `document.querySelector("#si-countdown")?.textContent ?? ""`)
	t.Logf("countdown went from %s; success screen countdown %q", c1, c2)
	if got := w.eval(t, w.window, `[...document.querySelectorAll("#si-granted .si-scope")].map(e => e.dataset.scope).join(" ")`); got != "orders:read" {
		t.Errorf("granted scopes shown = %q, want orders:read", got)
	}
	if got := w.eval(t, w.window, `document.getElementById("si-missing")?.textContent ?? ""`); !strings.Contains(got, "orders:write") {
		t.Errorf("the unapproved scope is not named: %q", got)
	}
	tok := w.tokens(t, "personal")
	if tok.RefreshToken == "" || tok.AccessToken == "" || !slices.Equal(tok.Scopes, []string{"orders:read"}) {
		t.Fatalf("tokens in the store: scopes %v, refresh set %v", tok.Scopes, tok.RefreshToken != "")
	}
	html := w.eval(t, w.window, `document.documentElement.outerHTML`)
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken} {
		if strings.Contains(html, secret) {
			t.Error("the window shows a token")
		}
	}
	if rs, _ := w.reqs.List(ctx); len(rs) != 0 {
		t.Errorf("the answered request is still listed: %+v", rs)
	}
	w.shot(t, "success")

	// Companies shows the account with its scope, and Sign out revokes and removes the tokens.
	w.click(t, w.window, "#si-done")
	w.waitFor(t, w.window, "the account in Companies", `/^personal: .*orders:read/.test(document.querySelector(".co-account")?.textContent ?? "")`)
	w.shot(t, "companies")
	w.click(t, w.window, ".co-account button")
	w.click(t, w.window, ".co-account button[id$='-yes']")
	w.waitFor(t, w.window, "the signed-out Company", `document.querySelector(".co-card")?.textContent.includes("Not signed in.")`)
	if tok := w.tokens(t, "personal"); tok.RefreshToken != "" {
		t.Error("the refresh token is still stored after Sign out")
	}
	if n := w.s.ActiveRefreshTokens(w.e.Agent().ClientID()); n != 0 {
		t.Errorf("%d refresh tokens still active at the Company after Sign out", n)
	}
	if errs := w.eval(t, w.window, `JSON.stringify(__errors)`); errs != "[]" {
		t.Errorf("the window had script errors: %s", errs)
	}
	if v := w.eval(t, w.window, `JSON.stringify(__csp)`); v != "[]" {
		t.Errorf("the window broke its CSP: %s", v)
	}
}

// TestSignInDeviceInChromium: the User clicks "Sign in on another device", reads the code from
// the window, approves it on the Company's verification page (an HTTP form post, as from a
// phone), and the window reports success.
func TestSignInDeviceInChromium(t *testing.T) {
	w := newSignInWorld(t)
	w.openPlan(t)
	w.click(t, w.window, "#si-device")
	w.waitFor(t, w.window, "the device screen", `document.querySelector("#si-flow")?.dataset.kind === "device" && !!document.getElementById("si-user-code")`)
	code := w.eval(t, w.window, `document.getElementById("si-user-code").textContent`)
	if len(code) != 9 {
		t.Fatalf("user code %q", code)
	}
	if got := w.eval(t, w.window, `document.getElementById("si-qr").getAttribute("src").slice(0, 22)`); got != "data:image/png;base64," {
		t.Errorf("QR src starts %q", got)
	}
	page := w.eval(t, w.window, `document.getElementById("si-flow").textContent`)
	if !strings.Contains(page, w.co.Organization.Name) || !strings.Contains(page, w.co.Organization.Domain) {
		t.Errorf("the device screen does not name the Company and its domain: %q", page)
	}
	w.waitFor(t, w.window, "the countdown", `/^\d+:\d\d$/.test(document.getElementById("si-countdown").textContent)`)
	w.shot(t, "device")

	// The User approves on another device: the verification page's form.
	form := url.Values{"user_code": {code}, "account": {"alex@shop.example"}, "decision": {"approve"}, "scope": {"orders:read"}}
	resp, err := w.e.Transport().NoRedirectClient().PostForm(w.s.Issuer()+"/device", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approving the code: HTTP %d", resp.StatusCode)
	}
	w.waitFor(t, w.window, "the device success", `document.querySelector("#si-flow")?.dataset.state === "succeeded"`)
	if got := w.eval(t, w.window, `[...document.querySelectorAll("#si-granted .si-scope")].map(e => e.dataset.scope).join(" ")`); got != "orders:read" {
		t.Errorf("granted = %q", got)
	}
	if tok := w.tokens(t, "personal"); tok.RefreshToken == "" {
		t.Error("no refresh token stored after Device Sign-In")
	}
	w.shot(t, "device-success")
}
