package e2e

// The Inspector end to end: an approved operation through the window (the approval dialog's
// Approve button), then the Inspector in Chromium shows the exchanges with their causes, opens
// one to its decoded Session JWT and delegation with the User ID hidden, and exports the
// selection as HAR 1.2 without a compact JWT in it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestInspectorInChromium(t *testing.T) {
	w := startApprovalWorld(t)
	w.requestExchange()
	w.waitFor("the approval dialog", dialogOpen, 10*time.Second)
	w.waitFor("the end of the guard", `document.getElementById("approve-button").disabled === false`, 5*time.Second)
	w.do("click Approve", chromedp.Click(chromedp.ID("approve-button")))
	w.waitFor("the Company's result", `!!document.getElementById("result-body")`, 30*time.Second)

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
