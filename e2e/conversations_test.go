package e2e

// The conversation view end to end (spec 8.3, 8.6, 8.9, 10.1): the reference Company Agent
// (agentcore/poppytest) over real TLS on loopback, the Host as `poppydesk` builds it (apptest:
// its engine, conversation Manager and the window's Conversations service) and the real
// frontend, joined by the browser-testable bridge and driven in headless Chromium. The user
// starts a conversation in the window; the reply streams in as text-delta pieces (observed in
// the page before the full message replaces them); Hand off brings the named person; and a
// 10,000-event conversation renders with a small DOM while the frame time of scrolling it is
// measured in the page.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// partialRecorder records every distinct text of a message being written (data-writing rows).
const partialRecorder = `(() => {
  window.__partials = [];
  const grab = () => document.querySelectorAll("[data-writing] .conv-text").forEach((e) => {
    const t = e.textContent;
    if (__partials[__partials.length - 1] !== t) __partials.push(t);
  });
  new MutationObserver(grab).observe(document.body, { subtree: true, childList: true, characterData: true });
  return "ok";
})()`

// frameProbe scrolls the transcript a little every frame and returns the requestAnimationFrame
// deltas (ms) and the largest number of rows in the DOM seen meanwhile.
const frameProbe = `new Promise((resolve) => {
  const s = document.getElementById("conv-scroll");
  s.scrollTop = 0;
  const deltas = [];
  let maxRows = 0;
  let last = performance.now();
  let n = 0;
  const step = (now) => {
    deltas.push(now - last);
    last = now;
    maxRows = Math.max(maxRows, document.querySelectorAll("#conv-scroll .conv-row").length);
    s.scrollTop += 900;
    if (++n < 240 && s.scrollTop + s.clientHeight < s.scrollHeight) requestAnimationFrame(step);
    else resolve(JSON.stringify({ deltas: deltas.slice(1), maxRows, frames: n, scrollHeight: s.scrollHeight }));
  };
  requestAnimationFrame((t) => { last = t; requestAnimationFrame(step); });
})`

func TestConversationViewInChromium(t *testing.T) {
	dist, chromium := prerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Version = testVersion }})
	company := f.Company
	// Pieces 40 ms apart (the slow-stream fault), so the window shows the reply being written; a
	// person joins 400 ms after a handoff.
	if err := company.SetAgentFault(refcompany.AgentFaultSlowStream, true); err != nil {
		t.Fatal(err)
	}
	company.SetAgentDelays(time.Millisecond, 400*time.Millisecond)
	co := f.Discover(t)
	mgr := f.Host.Conversations()
	srv := serveWindow(t, ctx, f.Host, dist)

	bctx := windowBrowser(t, ctx, chromium, 1280, 860)
	if _, err := chromedp.Run(bctx, chromedp.NavigateResponse(srv.URL()+"#/conversations")); err != nil {
		t.Fatalf("opening the window page failed: %v", err)
	}
	w := &approvalWorld{t: t, bctx: bctx}
	w.waitFor("the window to load", `document.body.dataset.ready === "true"`, 10*time.Second)
	w.waitFor("the Company in the start box", fmt.Sprintf(`document.getElementById("conv-company")?.value === %q`, co.Identifier), 10*time.Second)

	// The user starts a conversation in the window; the reply streams in.
	if got := w.eval(partialRecorder); got != "ok" {
		t.Fatalf("installing the recorder: %s", got)
	}
	w.do("type the first message", chromedp.SendKeys(chromedp.ID("conv-start-text"), "Which jacket is warmer?"))
	w.do("click Start", chromedp.Click(chromedp.ID("conv-start")))
	const final = "The Stormline Insulated Jacket is the warmer one: it is rated down to -10 °C. I can exchange your jacket for it if you like."
	w.waitFor("the full reply", fmt.Sprintf(`[...document.querySelectorAll(".conv-company-agent:not(.conv-writing) .conv-text")].some((e) => e.textContent === %q) && !document.querySelector("[data-writing]")`, final), 20*time.Second)
	var partials []string
	if err := json.Unmarshal([]byte(w.eval(`JSON.stringify(window.__partials)`)), &partials); err != nil {
		t.Fatal(err)
	}
	streamed := 0
	for _, p := range partials {
		if p != "" && len(p) < len(final) && strings.HasPrefix(final, p) {
			streamed++
		}
	}
	if streamed == 0 {
		t.Fatalf("no partial text of the reply was shown before the full message; texts seen while writing: %q", partials)
	}
	t.Logf("the reply streamed: %d partial texts shown before the full message (first %q)", streamed, partials[0])
	if got := w.eval(`document.querySelector(".conv-user .conv-author")?.textContent ?? ""`); got != "You" {
		t.Errorf("the user's message is labelled %q, want You", got)
	}
	if got := w.eval(`document.querySelector(".conv-company-agent .conv-author")?.textContent ?? ""`); got != co.Organization.Name+"’s agent" {
		t.Errorf("the Company Agent's message is labelled %q", got)
	}

	// Hand off: queued for a person, then Alex, with a placeholder picture (the Company's
	// picture is a remote address, which the window never loads).
	w.do("click Hand off", chromedp.Click(chromedp.ID("conv-handoff")))
	w.waitFor("the person", `[...document.querySelectorAll(".conv-company-person .conv-author")].some((e) => e.textContent.startsWith("Alex"))`, 15*time.Second)
	w.waitFor("the person's status", `document.getElementById("conv-status").textContent.includes("a person is handling this")`, 10*time.Second)
	if got := w.eval(`document.querySelector(".conv-company-person .conv-avatar")?.textContent ?? ""`); got != "A" {
		t.Errorf("the person's picture placeholder shows %q, want the initial A", got)
	}
	if got := w.eval(`String(document.querySelectorAll("img.conv-avatar").length)`); got != "0" {
		t.Errorf("%s remote pictures rendered; the window must not load them", got)
	}
	// A second reply streams, this time from the person (a message written after the handoff).
	w.do("type a message", chromedp.SendKeys(chromedp.ID("conv-input"), "Which jacket is warmer, Alex?"))
	w.do("click Send", chromedp.Click(chromedp.ID("conv-send")))
	w.waitFor("Alex's reply", `document.querySelectorAll(".conv-company-person").length >= 2 && !document.querySelector("[data-writing]")`, 20*time.Second)
	w.waitFor("the list to show the state", `document.querySelector(".conv-item .conv-item-status")?.textContent.startsWith("Waiting for your reply")`, 10*time.Second)
	if shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(90)); err == nil {
		if err := os.MkdirAll(filepath.Join("..", "out"), 0o755); err == nil {
			_ = os.WriteFile(filepath.Join("..", "out", "conversation.png"), shot, 0o644)
		}
	}

	// The Company asks for the user (spec 8.10): nothing happens until the user clicks Accept;
	// then the Direct Conversation opens and the user types and reads themselves.
	w.do("type a message", chromedp.SendKeys(chromedp.ID("conv-input"), "Can a specialist check this?"))
	w.do("click Send", chromedp.Click(chromedp.ID("conv-send")))
	w.waitFor("the Company's request to talk with the user", `!!document.getElementById("conv-accept") && !document.getElementById("conv-invite").hidden`, 20*time.Second)
	if got := w.eval(`document.getElementById("conv-invite-reason")?.textContent ?? ""`); !strings.Contains(got, "specialist") {
		t.Errorf("the request's reason shows %q", got)
	}
	if got := w.eval(`String(document.querySelectorAll(".conv-item").length)`); got != "1" {
		t.Errorf("%s conversations listed before Accept; the request must not open anything by itself", got)
	}
	w.do("click Accept", chromedp.Click(chromedp.ID("conv-accept")))
	w.waitFor("the Direct Conversation", `document.getElementById("conv-title").textContent.startsWith("Direct Conversation with")`, 15*time.Second)
	w.waitFor("the person speaking first", `[...document.querySelectorAll(".conv-company-person:not(.conv-writing) .conv-text")].some((e) => e.textContent.includes("would you like the insulated jacket in medium?"))`, 20*time.Second)
	w.do("type in the Direct Conversation", chromedp.SendKeys(chromedp.ID("conv-input"), "Yes, medium please."))
	w.do("click Send", chromedp.Click(chromedp.ID("conv-send")))
	w.waitFor("the user's own words", `[...document.querySelectorAll(".conv-user .conv-text")].some((e) => e.textContent === "Yes, medium please.")`, 15*time.Second)
	w.do("close the Direct Conversation", chromedp.Click(chromedp.ID("conv-close")))
	w.waitFor("the Direct Conversation closed", `document.getElementById("conv-status").textContent === "Closed"`, 10*time.Second)

	// A 10,000-event conversation: started through the Manager, the Company adds the rest, the
	// Manager reads them all (the real engine), then the window opens it.
	company.SetAgentDelays(time.Millisecond, 30*time.Millisecond)
	if err := company.SetAgentFault(refcompany.AgentFaultSlowStream, false); err != nil {
		t.Fatal(err)
	}
	long, err := mgr.Start(ctx, conversation.Start{Company: co.Identifier, Text: "Tell me everything about the jackets, a long list.", Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The scripted reply has finished writing once the Company's message is in the conversation.
	w.waitUntil("the scripted reply", func() bool { return len(company.AgentMessageIDs(long.ConversationID)) > 0 }, 10*time.Second)
	burst := 10000 - company.AgentEventCount(long.ConversationID)
	if err := company.AgentBurst(long.ConversationID, burst); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for {
		if _, err := mgr.Read(ctx, co.Identifier, long.ConversationID, 0); err != nil {
			t.Fatal(err)
		}
		if _, n, _ := mgr.Entries(ctx, co.Identifier, long.ConversationID, 0, 0); n >= 9990 {
			break
		}
		if time.Since(began) > 60*time.Second {
			t.Fatal("the Manager did not read the 10,000 events in a minute")
		}
	}
	_, entries, _ := mgr.Entries(ctx, co.Identifier, long.ConversationID, 0, 0)
	t.Logf("the Manager read %d events (%d entries) over JSON reads in %v (%.0f events/s)", company.AgentEventCount(long.ConversationID), entries,
		time.Since(began).Round(time.Millisecond), float64(entries)/time.Since(began).Seconds())

	w.waitFor("the long conversation in the list", fmt.Sprintf(`!!document.querySelector('.conv-item[data-id=%q]')`, long.ConversationID), 10*time.Second)
	opened := time.Now()
	// The list re-renders whenever a conversation changes, so a node found by one CDP call can be
	// gone by the next: find and click it in one step in the page (choosing a conversation in the
	// list is navigation, not a decision, so a script click is what a user's click does here).
	w.waitFor("open the long conversation", fmt.Sprintf(`(() => { const e = document.querySelector('.conv-item[data-id=%q]'); if (!e) return false; e.click(); return true; })()`, long.ConversationID), 10*time.Second)
	lastText := fmt.Sprintf("Burst message %d of %d.", burst, burst)
	w.waitFor("the last message of the long conversation", `document.getElementById("conv-scroll").textContent.includes("Burst message") && !!document.querySelector("#conv-scroll .conv-row") && document.getElementById("conv-topic").textContent.startsWith("Started with: “Tell me everything")`, 30*time.Second)
	w.waitFor("the bottom of the transcript", fmt.Sprintf(`document.getElementById("conv-scroll").textContent.includes(%q)`, lastText), 30*time.Second)
	t.Logf("the window showed the 10,000-event conversation %v after the click", time.Since(opened).Round(time.Millisecond))
	rows := w.eval(`String(document.querySelectorAll("#conv-scroll .conv-row").length)`)
	var nrows int
	fmt.Sscan(rows, &nrows)
	if nrows == 0 || nrows > 200 {
		t.Fatalf("the DOM holds %d message rows for a 10,000-event conversation; want a few dozen (virtualized)", nrows)
	}

	res, err := chromedp.Run(bctx, chromedp.Evaluate[string](frameProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("measuring the frame time: %v", err)
	}
	var probe struct {
		Deltas       []float64 `json:"deltas"`
		MaxRows      int       `json:"maxRows"`
		Frames       int       `json:"frames"`
		ScrollHeight float64   `json:"scrollHeight"`
	}
	if err := json.Unmarshal([]byte(res), &probe); err != nil || len(probe.Deltas) < 10 {
		t.Fatalf("frame probe: %s (%v)", res, err)
	}
	if probe.MaxRows > 200 {
		t.Errorf("while scrolling, the DOM held up to %d message rows; want far fewer than 10,000", probe.MaxRows)
	}
	d := append([]float64(nil), probe.Deltas...)
	sort.Float64s(d)
	t.Logf("scrolling the 10,000-event transcript (%.0f px tall): %d frames, frame time median %.1f ms, p95 %.1f ms, max %.1f ms; at most %d rows in the DOM",
		probe.ScrollHeight, len(d), d[len(d)/2], d[len(d)*95/100], d[len(d)-1], probe.MaxRows)

	if got := w.eval(`JSON.stringify([window.__errors, window.__csp])`); got != `[[],[]]` {
		t.Errorf("page errors or CSP violations: %s", got)
	}
}
