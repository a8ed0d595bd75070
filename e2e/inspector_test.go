package e2e

// The Inspector end to end: an approved operation through the window (the approval dialog's
// Approve button), then the Inspector in Chromium shows the exchanges with their causes, opens
// one to its decoded Session JWT and delegation with the User ID hidden, and exports the
// selection as HAR 1.2 without a compact JWT in it.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

func TestInspectorInChromium(t *testing.T) {
	w := startApprovalWorld(t)
	w.approveExchangeInWindow()

	w.openInspector()
	w.checkApprovedExchange()
	if dir := os.Getenv("POPPYDESK_SHOTS"); dir != "" {
		png, err := chromedp.Run(w.bctx, chromedp.CaptureScreenshot())
		if err == nil {
			os.WriteFile(filepath.Join(dir, "inspector-chromium.png"), png, 0o644)
		}
	}
	// Export the selection as HAR.
	w.do("select the rows", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#insp-list input[type=checkbox]").forEach(b => b.click())`))
	w.do("export HAR", chromedp.Click(chromedp.ID("insp-har")))
	w.waitFor("the HAR", `document.getElementById("insp-export").value.includes('"version": "1.2"')`, 10*time.Second)
	if har := w.eval(`document.getElementById("insp-export").value`); strings.Contains(har, "eyJ") || !strings.Contains(har, "/exchanges") {
		t.Errorf("HAR holds a compact JWT or lacks the exchange: %.300s", har)
	}
}

// openInspector opens the Inspector's timeline and waits for its rows.
// approveExchangeInWindow asks for the jacket exchange, waits for the dialog's painted revision
// and its guard, clicks Approve and waits for the Company's result.
func (w *approvalWorld) approveExchangeInWindow() {
	w.t.Helper()
	w.requestExchange()
	w.waitFor("the approval dialog", dialogOpen, 10*time.Second)
	w.waitFor("the end of the guard", guardOver, 5*time.Second)
	w.do("click Approve", chromedp.Click(chromedp.ID("approve-button")))
	w.waitFor("the Company's result", `!!document.getElementById("result-body")`, 30*time.Second)
}

func (w *approvalWorld) openInspector() {
	w.t.Helper()
	w.do("open the Inspector", chromedp.Evaluate[chromedp.Void](`location.hash = "#/inspector"`))
	w.waitFor("the timeline", `document.querySelectorAll("#insp-list .insp-open").length > 3`, 10*time.Second)
}

// checkApprovedExchange finds the jacket exchange approved in the window on the open timeline
// and opens it: it shows the decoded Session JWT and delegation with the User ID hidden, the
// DPoP-style claims, its cause (the window's Approve) and the Poppy-Approval header, and no
// compact JWT appears anywhere in the window.
func (w *approvalWorld) checkApprovedExchange() {
	w.t.Helper()
	// The operation's exchanges: the 403 approval_required and the approved 201.
	w.do("search for the exchange", chromedp.SendKeys("#insp-search", "exchanges"))
	w.waitFor("the approved request", `[...document.querySelectorAll("#insp-list .insp-status")].some(e => e.textContent === "201")`, 10*time.Second)
	w.do("open it", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#insp-list .insp-open")].find(b => b.querySelector(".insp-status").textContent === "201").click()`))
	w.waitFor("the decoded tokens", `!!document.querySelector(".insp-entry .insp-tokens")`, 10*time.Second)
	text := w.eval(`document.getElementById("insp-detail").innerText`)
	for _, want := range []string{"Session JWT", "poppy-session+jwt", "delegation", "poppy-delegation+jwt", `"sub": "(hidden)"`, "htm", "caused by window: Approvals.Approve", "Poppy-Approval"} {
		if !strings.Contains(text, want) {
			w.t.Errorf("the opened exchange does not show %q:\n%s", want, text)
		}
	}
	if strings.Contains(w.eval(`document.body.innerText`), "eyJ") {
		w.t.Error("a compact JWT is shown in the window")
	}
}

// TestInspectorResendInChromium: a Company developer opens the operation's 403 approval_required
// exchange in the Inspector, edits its body in the form and sends it again: the reference
// Company receives the edited body under a new Session JWT, the window shows the Company's
// answer beside the original (its refusal in words: the item was exchanged when approved; two
// decoded Session JWTs with different jti), and the timeline
// lists the new exchange as a resend of the original.
func TestInspectorResendInChromium(t *testing.T) {
	w := startApprovalWorld(t)
	w.approveExchangeInWindow()
	const path = "/api/orders/ord_7Hk2/exchanges"
	before := len(w.company.RequestsTo(refcompany.ShopHost, path))

	w.openInspector()
	w.do("search for the exchange", chromedp.SendKeys("#insp-search", "exchanges"))
	w.waitFor("the refused request", `[...document.querySelectorAll("#insp-list .insp-status")].some(e => e.textContent === "403")`, 10*time.Second)
	origID := w.eval(`(() => { const b = [...document.querySelectorAll("#insp-list .insp-open")].find(b => b.querySelector(".insp-status").textContent === "403"); b.click(); return b.dataset.id; })()`)
	w.waitFor("the edit button", `!!document.getElementById("insp-resend-open")`, 10*time.Second)
	w.do("click Edit and resend", chromedp.Click(chromedp.ID("insp-resend-open")))
	w.waitFor("the form", `!!document.getElementById("insp-rs-body")`, 5*time.Second)
	if h := w.eval(`document.getElementById("insp-rs-headers").value`); strings.Contains(h, "Poppy-Session") || strings.Contains(h, "Authorization") {
		t.Errorf("the form offers a header the pipeline makes anew:\n%s", h)
	}
	const edited = `{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-l"}`
	w.do("clear the body", chromedp.Evaluate[chromedp.Void](`document.getElementById("insp-rs-body").value = ""`))
	w.do("type the edited body", chromedp.SendKeys(chromedp.ID("insp-rs-body"), edited))
	w.do("send it again", chromedp.Click(chromedp.ID("insp-rs-send")))
	w.waitFor("the answer beside the original", `!!document.getElementById("insp-compare") && document.querySelectorAll("#insp-compare .insp-entry").length === 2`, 30*time.Second)

	got := w.company.RequestsTo(refcompany.ShopHost, path)
	if len(got) != before+1 {
		t.Fatalf("the Company received %d requests to %s, want 1", len(got)-before, path)
	}
	last := got[len(got)-1]
	if string(last.Body) != edited {
		t.Errorf("the Company received %s, not the edited body", last.Body)
	}
	jtiOf := func(r refcompany.Request) string {
		jti, _ := poppytest.Claims(t, r.Header.Get("Poppy-Session"))["jti"].(string)
		return jti
	}
	for _, r := range got[:len(got)-1] {
		if jtiOf(r) == jtiOf(last) {
			t.Errorf("the resend carried an earlier request's Session JWT (jti %s)", jtiOf(last))
		}
	}
	// The window: the Company's answer in words, two decoded Session JWTs with different jti
	// (read from the claims as shown, whose times carry the local date beside them).
	if res := w.eval(`document.getElementById("insp-rs-result").textContent`); !strings.Contains(res, "The Company refused it: HTTP 409 already_exchanged") {
		t.Errorf("the answer shown: %q", res)
	}
	jtis := w.eval(`[...document.querySelectorAll('#insp-compare [aria-label="Session JWT (Poppy-Session) claims"]')].map(p => (p.textContent.match(/"jti": "([^"]+)"/) || [])[1]).join(" ")`)
	if f := strings.Fields(jtis); len(f) != 2 || f[0] == f[1] || f[1] != jtiOf(last) {
		t.Errorf("the decoded Session JWTs shown have jti %q; the Company received %s", jtis, jtiOf(last))
	}
	w.waitFor("the new row linked to the original", `[...document.querySelectorAll("#insp-list .insp-row")].some(r => r.dataset.resendOf === "`+origID+`")`, 10*time.Second)
	if strings.Contains(w.eval(`document.body.innerText`), "eyJ") {
		t.Error("a compact JWT is shown in the window")
	}
}

// TestInspectorFlowInChromium: the approval given in the window is a flow in the Inspector's
// Flows tab, drawn as a sequence diagram whose exchanges are, in count and order, those the
// timeline lists for it: the request the Company answered 403 approval_required, then those
// with the window's Approve as their cause; choosing an arrow opens its exchange.
func TestInspectorFlowInChromium(t *testing.T) {
	w := startApprovalWorld(t)
	w.approveExchangeInWindow()

	w.openInspector()
	w.waitFor("the approved request", `[...document.querySelectorAll("#insp-list .insp-status")].some(e => e.textContent === "201")`, 10*time.Second)
	recorded := strings.Fields(w.eval(`[...document.querySelectorAll("#insp-list .insp-open")]
		.filter(b => b.querySelector(".insp-meta").textContent.includes("window: Approvals.Approve") ||
			(b.querySelector(".insp-status").textContent === "403" && b.querySelector(".insp-url").textContent.endsWith("/ord_7Hk2/exchanges")))
		.map(b => b.dataset.id).reverse().join(" ")`))
	if len(recorded) == 0 {
		t.Fatal("the timeline lists no exchange of the approval")
	}
	w.do("open the Flows tab", chromedp.Click(chromedp.ID("insp-tab-flows")))
	w.waitFor("the approval flow", `[...document.querySelectorAll("#seq-flows .insp-url")].some(e => e.textContent.startsWith("Approval"))`, 10*time.Second)
	w.do("choose it", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#seq-flows .insp-open")].find(b => b.querySelector(".insp-url").textContent.startsWith("Approval")).click()`))
	w.waitFor("the diagram", `document.querySelectorAll("#seq-drawing svg .seq-exchange").length > 0`, 10*time.Second)
	drawn := strings.Fields(w.eval(`[...document.querySelectorAll("#seq-drawing svg .seq-exchange")].map(g => g.dataset.exchange).join(" ")`))
	if strings.Join(drawn, " ") != strings.Join(recorded, " ") {
		t.Errorf("the diagram draws exchanges %v; the timeline recorded %v", drawn, recorded)
	}
	if n := w.eval(`String(document.querySelectorAll("#seq-drawing svg .seq-req").length) + " " + document.querySelectorAll("#seq-drawing svg .seq-resp").length`); n != fmt.Sprintf("%d %d", len(recorded), len(recorded)) {
		t.Errorf("request and answer arrows: %s, want %d each", n, len(recorded))
	}
	lanes := w.eval(`[...document.querySelectorAll("#seq-drawing .seq-lane")].map(e => e.textContent).join(" | ")`)
	if !strings.HasPrefix(lanes, "Poppydesk | ") || !strings.Contains(lanes, refcompany.ShopHost) {
		t.Errorf("lanes: %s", lanes)
	}
	last := recorded[len(recorded)-1]
	w.do("choose the last arrow", chromedp.Click(`#seq-drawing g.seq-exchange[data-exchange="`+last+`"]`))
	w.waitFor("its exchange", `!!document.getElementById("insp-entry-`+last+`")`, 10*time.Second)
	if dir := os.Getenv("POPPYDESK_SHOTS"); dir != "" {
		if png, err := chromedp.Run(w.bctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(filepath.Join(dir, "inspector-flow.png"), png, 0o644)
		}
	}
}
