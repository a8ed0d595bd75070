package e2e

// The approval dialog end to end (invariants 1, 2 and 4; Operations extension v2 sections 3
// "Formatting", 5 and 6): the reference Company (agentcore/poppytest) over real TLS on loopback,
// the Host as `poppydesk` builds it (engine, approval queue, window services), the real frontend,
// joined by the browser-testable bridge and driven in headless Chromium. The test asks for the exchange as the model would (Queue.CallAPI), and the
// only approval is a click on the window's Approve button.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// approvalWorld is everything one dialog test runs: Company, engine, queue, services, browser.
type approvalWorld struct {
	t       *testing.T
	company *refcompany.Server
	queue   *approvals.Queue
	ident   string // the Company identifier
	name    string // organization.name from discovery
	api     string // the OpenAPI description's URL from poppy.json
	bctx    context.Context
	logs    *apptest.Buffer // the Host's log lines
}

const demoAccount = refcompany.DefaultAccount

// testRequester is the agent's self-description the tests' requests carry, as modelapi records
// it from an MCP client's initialize.
const testRequester = "Test Agent 1.0 via poppydesk mcp"

func startApprovalWorld(t *testing.T, faults ...string) *approvalWorld {
	t.Helper()
	return startWorld(t, false, faults...)
}

// startWorld starts the world: the reference Company and the Host built as `poppydesk` builds
// it (apptest), signed in as demoAccount, its window services on the bridge in Chromium.
// withAgent runs the Host in demo mode with the model's socket, so the Approvals section's
// "Run the example agent" drives the scripted agent through the model interface.
func startWorld(t *testing.T, withAgent bool, faults ...string) *approvalWorld {
	t.Helper()
	dist, chromium := prerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	f := apptest.Start(t, apptest.Options{Faults: faults, Demo: withAgent, Socket: withAgent})
	if !withAgent { // the demo signs its account in itself
		f.SignIn(t, demoAccount, "orders:read", "orders:write")
	}
	co := f.Discover(t)
	var api string
	for _, a := range co.Document.APIs {
		if a.Type == "openapi" {
			api = a.URL
		}
	}
	srv := serveWindow(t, ctx, f.Host, dist)

	bctx := windowBrowser(t, ctx, chromium, 1200, 860)
	if _, err := chromedp.Run(bctx, chromedp.NavigateResponse(srv.URL())); err != nil {
		t.Fatalf("opening the window page failed: %v", err)
	}
	w := &approvalWorld{t: t, company: f.Company, queue: f.Host.Queue(), ident: co.Identifier, name: co.Organization.Name, api: api, bctx: bctx, logs: f.Logs}
	w.waitFor("the window to load", `document.body.dataset.ready === "true"`, 10*time.Second)
	return w
}

func (w *approvalWorld) eval(expr string) string {
	w.t.Helper()
	s, err := chromedp.Run(w.bctx, chromedp.Evaluate[string](expr))
	if err != nil {
		w.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

func (w *approvalWorld) waitFor(what, expr string, timeout time.Duration) {
	w.t.Helper()
	if _, err := chromedp.Run(w.bctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
		w.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// waitUntil polls a condition on the Go side until it holds.
func (w *approvalWorld) waitUntil(what string, ok func() bool, timeout time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			w.t.Fatalf("waiting for %s: it did not happen within %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *approvalWorld) do(what string, a chromedp.Action[chromedp.Void]) {
	w.t.Helper()
	// Views re-render on Go events, so an element CDP has just located can be replaced before
	// the click lands ("Could not find node with given id"); a person would simply click the new
	// one, so try again a few times.
	var err error
	for range 20 {
		if err = chromedp.Do(w.bctx, a); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		w.t.Fatalf("%s: %v", what, err)
	}
}

// requestExchange asks for the spec's jacket exchange through the Orders API, as the model would.
func (w *approvalWorld) requestExchange() *approvals.Outcome {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := w.queue.CallAPI(ctx, approvals.APICall{
		Company: w.ident, Account: demoAccount, API: w.api, OperationID: "exchangeItem",
		Input:     apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)},
		Intent:    map[string]string{"replacement_sku": "stormline-insulated-m", "price_difference": "70.00"},
		Requester: testRequester,
	})
	if err != nil {
		w.t.Fatalf("the exchange request failed: %v", err)
	}
	if out.Status != "waiting_for_user" || out.ApprovalID == "" {
		w.t.Fatalf("the exchange request returned %+v, want waiting_for_user with an approval ID", out)
	}
	return out
}

// approvedRequests returns the exchange requests the Company received that carried an approval.
func (w *approvalWorld) approvedRequests() []refcompany.Request {
	var out []refcompany.Request
	for _, r := range w.company.RequestsTo(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges") {
		if len(r.Header.Values(operations.HeaderName)) > 0 {
			out = append(out, r)
		}
	}
	return out
}

const dialogOpen = `!!document.getElementById("approval-dialog") && document.getElementById("approval-company").textContent !== ""`

// guardOver holds once the approval dialog's revision is painted and the guard that counts from
// that paint has ended: Approve then acts on a click.
const guardOver = `(() => { const d = document.getElementById("approval-dialog"); return !!d && d.dataset.painted === d.dataset.revision && document.getElementById("approve-button").getAttribute("aria-disabled") === "false"; })()`

func TestApprovalDialogInChromium(t *testing.T) {
	w := startApprovalWorld(t)

	out := w.requestExchange()
	asked := time.Now()
	w.waitFor("the approval dialog", dialogOpen, 10*time.Second)
	toDialog := time.Since(asked)
	// The guard must still be on: Approve was shown less than a second ago.
	// (aria-disabled, never disabled: a press on it during the guard must reach the guard.)
	if got := w.eval(`document.getElementById("approve-button").getAttribute("aria-disabled")`); got != "true" {
		t.Errorf("Approve is available %v after the dialog appeared; the guard must keep it off for about 1 s", toDialog)
	}
	if got := w.eval(`document.getElementById("approval-guard").textContent`); !strings.Contains(got, "stray click") {
		t.Errorf("no visible reason while Approve is disabled: %q", got)
	}
	if got := w.eval(`document.getElementById("approval-dialog").dataset.approval`); got != out.ApprovalID {
		t.Errorf("the dialog shows approval %q, the queue returned %q", got, out.ApprovalID)
	}
	// The window reports the painted dialog; the Host logs the time since it sent the event (what
	// scripts/smoke.sh reads in the real window).
	w.waitUntil("the window's report of the painted dialog", func() bool {
		return strings.Contains(w.logs.String(), `"msg":"approval dialog shown","approval":"`+out.ApprovalID+`","since_event_ms":`)
	}, 10*time.Second)

	// it shows the verified Company and the terms.
	{
		if got := w.eval(`document.getElementById("approval-company").textContent`); got != w.name {
			t.Errorf("Company name = %q, want %q (from discovery)", got, w.name)
		}
		if got := w.eval(`document.getElementById("approval-domain").textContent`); got != w.company.Domain {
			t.Errorf("Company domain = %q, want %q", got, w.company.Domain)
		}
		// The terms in words, the amount with its currency; the Company's pointers and JSON
		// values one click away, behind Details.
		terms := w.eval(`Array.from(document.querySelectorAll("#approval-terms tbody tr")).map((r) => r.cells[0].textContent + " = " + r.cells[1].textContent).join("\n")`)
		for _, want := range []string{"Order ID = ord_7Hk2", "Item ID = itm_4Qa", "Replacement SKU = stormline-insulated-m", "Price difference = $70.00"} {
			if !strings.Contains(terms, want) {
				t.Errorf("terms lack %s:\n%s", want, terms)
			}
		}
		raw := w.eval(`Array.from(document.querySelectorAll("#approval-details #approval-terms-raw tbody tr")).map((r) => r.cells[0].textContent + " = " + r.cells[1].textContent).join("\n")`)
		for _, want := range []string{`/order_id = "ord_7Hk2"`, `/price_difference/amount = "70.00"`, `/price_difference/currency = "USD"`} {
			if !strings.Contains(raw, want) {
				t.Errorf("the raw terms behind Details lack %s:\n%s", want, raw)
			}
		}
		if got := w.eval(`document.getElementById("approval-details").open ? "open" : "closed"`); got != "closed" {
			t.Errorf("Details is %s when the dialog opens, want closed", got)
		}
		if got := w.eval(`document.getElementById("approval-requester").textContent`); got != "Asked by "+testRequester {
			t.Errorf("requester = %q, want the agent's own name and version", got)
		}
		if got := w.eval(`document.getElementById("approval-details").contains(document.getElementById("approval-session")) && document.getElementById("approval-details").contains(document.getElementById("approval-request")) ? "true" : "false"`); got != "true" {
			t.Errorf("the Session and the raw request are not behind Details")
		}
		if got := w.eval(`document.getElementById("approval-summary").textContent`); !strings.Contains(got, "Stormline Insulated Jacket (M)") || !strings.Contains(got, "$70.00 more") {
			t.Errorf("summary = %q", got)
		}
		if got := w.eval(`document.getElementById("approval-account").textContent`); got != demoAccount {
			t.Errorf("account = %q", got)
		}
		if got := w.eval(`document.getElementById("approval-request").textContent`); !strings.HasPrefix(got, "POST https://"+w.company.Domain+"/api/orders/ord_7Hk2/exchanges") {
			t.Errorf("request = %q", got)
		}
		if got := w.eval(`document.getElementById("approval-expiry").textContent`); !strings.HasPrefix(got, "Expires in 9 min") && !strings.HasPrefix(got, "Expires in 10 min") {
			t.Errorf("expiry = %q", got)
		}
	}

	w.waitFor("the end of the guard", guardOver, 5*time.Second)
	shot, err := chromedp.Run(w.bctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Join("..", "out"), 0o755); err == nil {
		_ = os.WriteFile(filepath.Join("..", "out", "approval-dialog.png"), shot, 0o644)
	}

	// Enter on Approve does not approve.
	{
		// Every call the page makes to Go from here on is kept, so that the test can wait until
		// each has been answered: an approval would have reached the Company by then (Approve
		// returns after the send).
		w.eval(`(() => { const f = window.fetch; window.bridgeCalls = [];
			window.fetch = function (u, o) { const p = f.apply(this, arguments);
				if (String(u).includes("/bridge/call")) window.bridgeCalls.push({ name: JSON.parse(o.body).name, t: performance.now(), done: p.then(() => 0, () => 0) });
				return p; }; return "kept"; })()`)
		w.do("focus Approve", chromedp.Focus(chromedp.ID("approve-button")))
		w.do("press Enter", chromedp.KeyEvent(kb.Enter))
		w.waitFor("the Enter hint", `document.getElementById("approval-guard").textContent.includes("Enter does not approve")`, 5*time.Second)
		calls, err := chromedp.Run(w.bctx, chromedp.Evaluate[string](`Promise.all(window.bridgeCalls.map(c => c.done)).then(() => window.bridgeCalls.map(c => c.name).join(" "))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("waiting for the page's calls: %v", err)
		}
		if strings.Contains(calls, ".Approve") {
			t.Fatalf("Enter called %q", calls)
		}
		if n := len(w.approvedRequests()); n != 0 {
			t.Fatalf("Enter sent %d approvals to the Company", n)
		}
		if l := w.company.Ledger(); len(l) != 0 {
			t.Fatalf("Enter performed the exchange: %+v", l)
		}
	}

	displayed := w.eval(`document.getElementById("approval-dialog").dataset.revision`)
	clicked := time.Now()
	w.eval(`(() => { document.addEventListener("click", (e) => { if (e.target.closest && e.target.closest("#approve-button")) window.approveClickAt ??= performance.now(); }, true); return "listening"; })()`)
	// The guard counts from the frame that shows the dialog (a headless browser paints it as
	// late as the screenshot above) and restarts on any key, Enter included.
	w.waitFor("the end of the guard", guardOver, 5*time.Second)
	w.do("click Approve", chromedp.Click(chromedp.ID("approve-button")))
	w.waitFor("the Company's result", `!!document.getElementById("result-body")`, 30*time.Second)
	toResult := time.Since(clicked)
	// Exactly one approval call left the page, after the click: Enter did not approve later
	// either.
	approveCalls, err := chromedp.Run(w.bctx, chromedp.Evaluate[string](`Promise.all(window.bridgeCalls.map(c => c.done)).then(() =>
		window.bridgeCalls.filter(c => c.name.endsWith(".Approve")).map(c => c.t >= window.approveClickAt ? "after the click" : "before the click").join(", "))`, chromedp.EvalAwaitPromise))
	if err != nil || approveCalls != "after the click" {
		t.Fatalf("the page's approval calls: %q (%v); want exactly one, after the click", approveCalls, err)
	}
	t.Logf("approval_required (CallAPI returned) → dialog on screen: %v", toDialog)
	t.Logf("Approve click → the Company's response shown: %v", toResult)

	// what reached the Company.
	{
		ledger := w.company.Ledger()
		if len(ledger) != 1 {
			t.Fatalf("the Company performed %d exchanges, want exactly 1: %+v", len(ledger), ledger)
		}
		if ledger[0].Revision != displayed || ledger[0].Interface != refcompany.InterfaceAPI || ledger[0].ReplacementSKU != "stormline-insulated-m" {
			t.Errorf("performed %+v, want revision %q (the one displayed) through the API", ledger[0], displayed)
		}
		reqs := w.approvedRequests()
		if len(reqs) == 0 {
			t.Fatal("no request carried Poppy-Approval")
		}
		for _, r := range reqs {
			a, err := operations.ParseApprovalHeader(r.Header.Values(operations.HeaderName))
			if err != nil {
				t.Fatalf("Poppy-Approval %q: %v", r.Header.Values(operations.HeaderName), err)
			}
			if a.Revision != displayed || a.OperationID != ledger[0].OperationID {
				t.Errorf("Poppy-Approval named %+v, want operation %s revision %s", a, ledger[0].OperationID, displayed)
			}
		}
	}

	// the dialog shows the Company's result words.
	{
		body := w.eval(`document.getElementById("result-body").textContent`)
		if !strings.Contains(body, "Exchange confirmed. The Stormline Insulated Jacket (M) ships within 2 days") || !strings.Contains(body, `"status": "confirmed"`) {
			t.Errorf("result body = %q", body)
		}
		if got := w.eval(`document.getElementById("approve-button").hidden ? "hidden" : "shown"`); got != "hidden" {
			t.Errorf("Approve is still %s after the decision", got)
		}
		// A sentence first, then the Company's own words, marked as its words.
		if got := w.eval(`document.getElementById("result-status").textContent`); got != w.name+" performed what you approved." {
			t.Errorf("result sentence = %q", got)
		}
		if got := w.eval(`document.getElementById("result-text").textContent`); !strings.HasPrefix(got, "Exchange confirmed.") {
			t.Errorf("the Company's words = %q", got)
		}
		if got := w.eval(`document.getElementById("result-text").closest("figure").querySelector("figcaption").textContent`); got != "What "+w.name+" said, in its own words:" {
			t.Errorf("the Company's words are marked %q", got)
		}
		if got := w.eval(`document.getElementById("result-body").closest("details").id`); got != "result-details" {
			t.Errorf("the raw response is not behind Details")
		}
		// The decided item reads as a record.
		w.waitFor("the record", `/^Approved on .* · performed$/.test(document.getElementById("approval-kicker").textContent)`, 10*time.Second)
		if got := w.eval(`document.getElementById("approval-title").textContent`); strings.Contains(got, "?") {
			t.Errorf("the decided item still asks: %q", got)
		}
	}

	if errs := w.eval(`JSON.stringify(__errors)`); errs != "[]" {
		t.Errorf("the page had script errors: %s", errs)
	}
	if v := w.eval(`JSON.stringify(__csp)`); v != "[]" {
		t.Errorf("CSP violations: %s", v)
	}
}

func TestHostileSummaryInChromium(t *testing.T) {
	w := startApprovalWorld(t, refcompany.FaultSummaryHostile)
	w.requestExchange()
	w.waitFor("the approval dialog", dialogOpen, 10*time.Second)

	// Nothing in the whole document may come from the summary as an element: the page's own
	// links are the in-page navigation (#...) and its own scripts are files of this origin.
	audit := w.eval(`(() => {
	  const bad = [];
	  const dlg = document.getElementById("approval-overlay");
	  for (const tag of ["a", "img", "script", "iframe", "object", "embed", "form", "style", "link", "base", "meta"]) {
	    if (dlg.querySelectorAll(tag).length) bad.push("dialog has " + tag);
	  }
	  for (const tag of ["img", "iframe", "object", "embed", "form"]) {
	    if (document.querySelectorAll(tag).length) bad.push("document has " + tag);
	  }
	  for (const a of document.querySelectorAll("a")) if (!a.getAttribute("href").startsWith("#")) bad.push("link to " + a.getAttribute("href"));
	  for (const s of document.querySelectorAll("script")) {
	    const src = s.getAttribute("src") || "";
	    if (!src.startsWith("/")) bad.push("script " + (src || "inline"));
	  }
	  for (const e of document.querySelectorAll("*")) for (const at of e.attributes) if (at.name.toLowerCase().startsWith("on")) bad.push(e.tagName + " " + at.name);
	  return bad.join("\n");
	})()`)
	if audit != "" {
		t.Errorf("the hostile summary produced elements or attributes:\n%s", audit)
	}
	text := w.eval(`document.getElementById("approval-summary").innerText`)
	for _, want := range []string{"[Confirm here](https://evil.example/phish)", "![tracking pixel](https://evil.example/pixel.png)", "<script>alert('hi')</script>", `<img src=x onerror=alert(1)>`, "⟦U+202E⟧gnp.exe⟦U+202C⟧"} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary does not show %q as text", want)
		}
	}
	if shot, err := chromedp.Run(w.bctx, chromedp.FullScreenshot(90)); err == nil {
		if err := os.MkdirAll(filepath.Join("..", "out"), 0o755); err == nil {
			_ = os.WriteFile(filepath.Join("..", "out", "approval-dialog-hostile.png"), shot, 0o644)
		}
	}
	if got := w.eval(`document.querySelector("#approval-summary strong").textContent`); got != "Exchange" {
		t.Errorf("strong emphasis = %q", got)
	}
	// The long summary scrolls inside the dialog; the buttons stay on screen.
	geom := w.eval(`(() => {
	  const b = document.getElementById("approval-body"), btn = document.getElementById("approve-button").getBoundingClientRect();
	  return [b.scrollHeight > b.clientHeight, btn.bottom <= innerHeight && btn.top >= 0].join(",");
	})()`)
	if geom != "true,true" {
		t.Errorf("scrolling body / visible buttons = %s, want true,true", geom)
	}
	if got := w.eval(`document.getElementById("approval-warnings").textContent`); !strings.Contains(got, "U+202E") {
		t.Errorf("the invisible-character warnings are not shown: %q", got)
	}
	if v := w.eval(`JSON.stringify(__csp)`); v != "[]" {
		t.Errorf("CSP violations (something tried to load): %s", v)
	}
	if errs := w.eval(`JSON.stringify(__errors)`); errs != "[]" {
		t.Errorf("the page had script errors: %s", errs)
	}
}

// TestExampleAgentInChromium: the demo card's "Run the example agent" runs the scripted
// agent against the model socket; the agent's words appear in the window, the approval dialog
// opens, the user's Approve (after the guard) performs the exchange exactly once, and the agent
// reports the outcome.
func TestExampleAgentInChromium(t *testing.T) {
	w := startWorld(t, true)
	w.waitFor("the demo card", `!!document.getElementById("demo-agent")`, 10*time.Second)
	w.do("click Run the example agent", chromedp.Click(chromedp.ID("demo-agent")))
	w.waitFor("the approval dialog", dialogOpen, 30*time.Second)
	w.waitFor("the agent's words about waiting", `(document.getElementById("agent-lines")?.textContent ?? "").includes("waits for your decision")`, 10*time.Second)
	if l := w.company.Ledger(); len(l) != 0 {
		t.Fatalf("the exchange was performed before the user approved: %+v", l)
	}
	if got := w.eval(`document.getElementById("approval-requester").textContent`); !strings.HasPrefix(got, "Asked by poppydesk-example-agent") {
		t.Errorf("the dialog does not name the agent that asked: %q", got)
	}
	w.waitFor("the end of the guard", guardOver, 5*time.Second)
	w.do("click Approve", chromedp.Click(chromedp.ID("approve-button")))
	w.waitFor("the agent's final report", `(document.getElementById("agent-lines")?.textContent ?? "").includes("Outcome: the exchange was performed after your approval.")`, 60*time.Second)
	w.waitFor("the agent's end", `document.getElementById("agent-state")?.textContent === "The example agent has finished."`, 10*time.Second)
	lines := w.eval(`Array.from(document.querySelectorAll("#agent-lines li")).map((l) => l.textContent).join("\n")`)
	for _, want := range []string{"→ discover_company: ok", "→ describe_company: ok", "→ list_api_operations: ok", "→ call_api_operation: waiting_for_user", "→ wait_for_approval: performed"} {
		if !strings.Contains(lines, want) {
			t.Errorf("the agent's words lack %q:\n%s", want, lines)
		}
	}
	if ledger := w.company.Ledger(); len(ledger) != 1 || ledger[0].ReplacementSKU != "stormline-insulated-m" {
		t.Fatalf("the reference Company's ledger = %+v, want exactly one exchange", ledger)
	}
	if shot, err := chromedp.Run(w.bctx, chromedp.FullScreenshot(90)); err == nil {
		if err := os.MkdirAll(filepath.Join("..", "out"), 0o755); err == nil {
			_ = os.WriteFile(filepath.Join("..", "out", "example-agent.png"), shot, 0o644)
		}
	}
	if errs := w.eval(`JSON.stringify(__errors)`); errs != "[]" {
		t.Errorf("the page had script errors: %s", errs)
	}
	if v := w.eval(`JSON.stringify(__csp)`); v != "[]" {
		t.Errorf("CSP violations: %s", v)
	}
}
