//go:build realwindow

package realwindow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// TestClosingWithApprovalsWaiting closes the release window, in the dark theme at 800×600, while
// two approvals wait and the model waits for both: Ctrl+Q asks first and the user keeps the
// window; the window manager's close (Alt+F4) asks again and the user closes anyway. The window
// is gone within 2 s, the shutdown is clean, and both of the model's waits end with the status
// that says the window was closed and nothing was approved.
func TestClosingWithApprovalsWaiting(t *testing.T) {
	d := startDesktop(t, "1280x800")
	p := d.launch("GTK_THEME=Adwaita:dark")
	d.run("xdotool", "windowsize", "--sync", p.win, "800", "600")
	p.focusWindow()

	var ids []string
	for i, e := range []exchange{jacketUpgrade, socksToJacket} {
		before := p.shownCount()
		id := p.ask(e)
		p.waitShown(id, before)
		if i == 0 {
			time.Sleep(1200 * time.Millisecond)
			t.Logf("screenshot: %s", d.screenshot("dialog-800x600-dark.png"))
		}
		p.key("Escape")
		ids = append(ids, id)
	}

	// The model waits for both decisions.
	type waited struct {
		id, status, message string
	}
	results := make(chan waited, len(ids))
	for _, id := range ids {
		go func() {
			res, err := p.model.CallTool(context.Background(), &mcp.CallToolParams{Name: modelapi.ToolWaitForApproval,
				Arguments: map[string]any{"approval_id": id, "timeout_seconds": 120}})
			if err != nil {
				results <- waited{id, "", err.Error()}
				return
			}
			sc, _ := res.StructuredContent.(map[string]any)
			st, _ := sc["status"].(string)
			msg, _ := sc["message"].(string)
			results <- waited{id, st, msg}
		}()
	}
	time.Sleep(500 * time.Millisecond)

	askedToClose := func(how string) *node {
		t.Helper()
		var ask *node
		d.waitFor("the question before closing ("+how+")", 5*time.Second, func() bool {
			if !p.running() {
				t.Fatalf("%s closed the window at once, with 2 approvals waiting and nothing asked", how)
			}
			ask = d.a11y.document(t).find(func(n *node) bool { return n.Name == "Close Poppydesk?" })
			return ask != nil
		})
		if txt := ask.Desc; !strings.Contains(txt, "2 approvals are waiting") || !strings.Contains(txt, "nothing is approved") {
			t.Errorf("the question says %q; want how many approvals wait and that nothing is approved", txt)
		}
		return ask
	}

	// Ctrl+Q asks; Escape keeps the window.
	p.key("ctrl+q")
	askedToClose("Ctrl+Q")
	t.Logf("screenshot: %s", d.screenshot("close-question-800x600-dark.png"))
	p.key("Escape")
	time.Sleep(500 * time.Millisecond)
	if !p.running() {
		t.Fatal("Keep Poppydesk open (Escape) closed the window")
	}
	if d.a11y.document(t).find(func(n *node) bool { return n.Name == "Close Poppydesk?" }) != nil {
		t.Fatal("Escape did not dismiss the question")
	}

	// The window manager's close asks too; Close anyway closes.
	p.focusWindow()
	d.run("xdotool", "key", "alt+F4")
	ask := askedToClose("the window manager's close")
	anyway := button(ask, "Close anyway")
	if anyway == nil {
		t.Fatal("the question has no Close anyway button")
	}
	x, y := centre(t, anyway)
	start := time.Now()
	p.clickAt(x, y)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the window did not close within 10 s of Close anyway")
	}
	took := time.Since(start)
	t.Logf("Close anyway to process exit: %s", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("closing took %s; it must take at most 2 s", took.Round(time.Millisecond))
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("poppydesk exited with %d", code)
	}
	if len(logLines(p.log, "shutdown complete")) == 0 || len(logLines(p.log, "shutdown was not clean")) > 0 {
		t.Error("the log does not record a clean shutdown")
	}
	for range ids {
		select {
		case w := <-results:
			if w.status != modelapi.StatusWindowClosed {
				t.Errorf("the model's wait for %s ended with %q (%s); want %q", w.id, w.status, w.message, modelapi.StatusWindowClosed)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a model's wait did not end when the window closed")
		}
	}
}
