package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestIdentityEnrollInChromium drives Settings → Identity as a user does, with a real operator
// (agentcore/operator over SQLite on loopback TLS): a wrong token is refused in words and
// records nothing; the right one enrolls this device, the section says a restart makes
// Poppydesk sign through the operator, and shows the operator's client_name and its logo, an
// inline data: image under the window's Content-Security-Policy.
func TestIdentityEnrollInChromium(t *testing.T) {
	ctx := context.Background()
	clk := &refcompany.Clock{}
	op := apptest.StartOperator(t, apptest.OperatorOptions{ClientName: "Acme Agents", Clock: clk})
	f := apptest.Start(t, apptest.Options{Clock: clk, Edit: op.Trust})
	p := openWindowPage(t, f.Host)
	p.eval(`location.hash = "#/settings"; "ok"`)
	p.waitFor("the Identity section", `!!document.getElementById("identity-url")`, 5*time.Second)
	if got := p.eval(`document.getElementById("identity-name").textContent`); got != "Your own published identity" {
		t.Errorf("before enrolling the section shows %q", got)
	}
	do := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(p.bctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	do("type the operator's URL", chromedp.SendKeys(chromedp.ID("identity-url"), op.URL))
	do("type a wrong token", chromedp.SendKeys(chromedp.ID("identity-token"), "ppd_enroll_wrong"))
	p.click("#identity-enroll")
	p.waitFor("the refusal", `(document.getElementById("identity-msg")?.textContent ?? "").startsWith("Enrolling failed: the operator")`, 15*time.Second)
	if msg := p.eval(`document.getElementById("identity-msg").textContent`); !strings.Contains(msg, "refused the enrollment token") || !strings.Contains(msg, "administrator") {
		t.Errorf("the refusal says %q", msg)
	}
	if v, err := f.Host.State().GetSetting(ctx, app.SettingOperator); err == nil {
		t.Fatalf("a refused enrollment recorded the operator %q", v)
	}

	do("clear the token", chromedp.Clear(chromedp.ID("identity-token")))
	do("type the token", chromedp.SendKeys(chromedp.ID("identity-token"), op.Token(t)))
	p.click("#identity-enroll")
	p.waitFor("the restart sentence", `(document.getElementById("identity-restart")?.textContent ?? "").startsWith("Restart Poppydesk to sign through")`, 15*time.Second)
	p.waitFor("the operator's name", `document.getElementById("identity-name")?.textContent === "Acme Agents"`, 15*time.Second)
	if got, want := p.eval(`document.getElementById("identity-restart").textContent`), "Restart Poppydesk to sign through Acme Agents ("+op.URL+")."; got != want {
		t.Errorf("restart sentence = %q, want %q", got, want)
	}
	p.waitFor("the logo to load", `(document.getElementById("identity-logo")?.naturalWidth ?? 0) > 0`, 5*time.Second)
	if src := p.eval(`document.getElementById("identity-logo").getAttribute("src")`); !strings.HasPrefix(src, "data:image/png;base64,") {
		t.Errorf("the logo's src = %.60q, want a data: URL", src)
	}
	if v, err := f.Host.State().GetSetting(ctx, app.SettingOperator); err != nil || v != op.URL {
		t.Errorf("the recorded operator = %q, %v", v, err)
	}
	if id := f.Host.Identity(ctx); !id.Restart || id.Next != app.IdentityOperator {
		t.Errorf("Identity after enrolling in the window = %+v", id)
	}
	p.shot("settings-identity")
	p.clean()
}
