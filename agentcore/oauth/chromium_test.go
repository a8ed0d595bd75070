package oauth_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
)

// chromiumPath returns Debian's Chromium, or skips (fails under POPPYDESK_REQUIRE_E2E=1).
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("/usr/bin/chromium")
	if err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatalf("POPPYDESK_REQUIRE_E2E=1 but Chromium is missing: %v", err)
		}
		t.Skip("Chromium (/usr/bin/chromium) is not installed; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
	}
	return p
}

// leafSPKI returns the base64 SHA-256 of the reference Company's leaf certificate's public key,
// for --ignore-certificate-errors-spki-list (trusts exactly that key).
func (f *fixture) leafSPKI(t *testing.T) string {
	t.Helper()
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(f.s.Port), &tls.Config{ServerName: "auth.shop.localhost", RootCAs: f.s.CA().Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestDirectSignInChromium is Direct Sign-In end to end with headless Chromium as the User's
// browser: Open navigates Chromium, the test ticks and submits the consent page, the engine's
// loopback listener gets the code, and the tokens end up in the store.
func TestDirectSignInChromium(t *testing.T) {
	chromium := chromiumPath(t)
	f := newFixture(t, fixtureOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("ignore-certificate-errors-spki-list", f.leafSPKI(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("DBUS_SESSION_BUS_ADDRESS=disabled:"),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}

	start := time.Now() // the User pressed "Sign in"
	flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read", "orders:write"},
		Open: func(u string) error { return chromedp.Do(bctx, chromedp.Navigate(u)) }})
	if err != nil {
		t.Fatal(err)
	}
	if flow.OpenErr != nil {
		t.Fatalf("Open failed: %v", flow.OpenErr)
	}
	// The User leaves orders:read ticked, unticks orders:write, and approves.
	if err := chromedp.Do(bctx,
		chromedp.WaitVisible(chromedp.CSS("#approve")),
		chromedp.Click(chromedp.CSS("#scope-orders\\:write")),
		chromedp.Click(chromedp.CSS("#approve")),
	); err != nil {
		t.Fatalf("answering the consent page: %v", err)
	}
	res, err := flow.Wait(ctx)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Direct Sign-In with Chromium: %s from Sign in to tokens stored (includes page loads and the consent clicks)", elapsed)
	if len(res.Granted) != 1 || res.Granted[0] != "orders:read" || len(res.Missing) != 1 {
		t.Errorf("result %+v, want orders:read granted and orders:write missing", res)
	}
	tok := defaultToken(f.bundle(t, "personal"))
	if tok.RefreshToken == "" || tok.AccessToken == "" {
		t.Fatal("no tokens stored")
	}
	// The browser follows the Company's redirect to the loopback page; wait until it is there.
	var loc string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		l, err := chromedp.Run(bctx, chromedp.Location())
		if err == nil && strings.HasPrefix(l, "http://127.0.0.1:") {
			loc = l
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not land on the loopback page (at %q, %v)", l, err)
		}
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS("#message"))); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if !strings.Contains(text, "You signed in to Shop") || !strings.Contains(text, "You can close this tab") {
		t.Errorf("loopback page text: %q", text)
	}
	code := mustQuery(t, loc).Get("code")
	for _, secret := range []string{code, tok.AccessToken, tok.RefreshToken} {
		if secret != "" && strings.Contains(html, secret) {
			t.Error("the loopback page shows a code or token")
		}
	}
}
