//go:build realwindow

package realwindow

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestApprovalDialog walks the approval dialog as a user does, in one launch of the release
// window: an approval arriving while another application has the focus, a click on Approve that
// brings the window back, the dialog as a screen reader hears it, the keyboard inside it, a burst
// of clicks on Approve, a decision and its record, a keyboard Decline, the Earlier list, and the
// dialog in a window of 800×600.
func TestApprovalDialog(t *testing.T) {
	d := startDesktop(t, "1280x800")
	p := d.launch()
	var latencies []float64
	var first string

	d.step(t, "the window has its icon", func(t *testing.T) {
		if out, _ := d.output("xprop", "-id", p.win, "_NET_WM_ICON"); !strings.Contains(out, "Icon (") {
			t.Errorf("the window has no icon that taskbars read (_NET_WM_ICON): %.200s", out)
		}
	})

	d.step(t, "an approval arriving while another application has the focus neither takes the focus nor raises the window", func(t *testing.T) {
		other := d.openOtherApp()
		before := p.shownCount()
		first = p.ask(jacketUpgrade)
		_, ms := p.waitShown(first, before)
		latencies = append(latencies, ms)
		time.Sleep(700 * time.Millisecond) // time for a raise or a focus change to take effect
		if a := d.activeWindow(); a != other.win {
			t.Errorf("the focus moved to window %s (Poppydesk is %s) when the approval arrived; it must stay with the application in use", a, p.win)
		}
		if d.above(p.win, other.win) {
			t.Errorf("the Poppydesk window was raised over the application in use (stacking %v)", d.stacking())
		}
		d.run("xdotool", "type", "--delay", "50", "abc")
		time.Sleep(300 * time.Millisecond)
		if got := other.keys(); !strings.Contains(got, "a b c") {
			t.Errorf("the keys typed after the approval arrived did not reach the application in use (it got %q)", got)
		}
		d.waitFor("a desktop notification", 5*time.Second, func() bool {
			for _, n := range d.notes.shown() {
				if strings.Contains(n, "Approval needed") {
					return true
				}
			}
			return false
		})
		if st := d.netState(p.win); !strings.Contains(st, "_NET_WM_STATE_DEMANDS_ATTENTION") {
			t.Errorf("the window does not ask for attention on the taskbar (urgency hint): %s", strings.TrimSpace(st))
		}
		d.waitFor("the taskbar badge to count 1 approval", 5*time.Second, func() bool { return d.badges.badge() == 1 })
		// Coming back to Poppydesk ends the attention request.
		p.focusWindow()
		d.waitFor("the urgency hint to be cleared", 5*time.Second, func() bool {
			return !strings.Contains(d.netState(p.win), "_NET_WM_STATE_DEMANDS_ATTENTION")
		})
	})

	d.step(t, "a click on Approve that brings the window back from another application does not approve", func(t *testing.T) {
		// The user goes back to another application, which sits clear of Approve, and the
		// dialog waits long past its guard.
		other := d.openOtherApp()
		d.run("xdotool", "windowmove", other.win, "0", "0")
		time.Sleep(1500 * time.Millisecond)
		dlg := dialogIn(d.a11y.document(t))
		if dlg == nil || button(dlg, "Approve") == nil {
			t.Fatal("no dialog with Approve")
		}
		x, y := centre(t, button(dlg, "Approve"))
		if d.above(other.win, p.win) {
			if ox, oy, ow, oh := d.geometry(other.win); x >= ox && x < ox+ow && y >= oy && y < oy+oh {
				t.Fatalf("the other application covers Approve (%d,%d is inside %d,%d %dx%d)", x, y, ox, oy, ow, oh)
			}
		}
		// One click on Approve: the window manager gives Poppydesk the focus and passes the
		// click on to it.
		p.clickAt(x, y)
		d.waitFor("Poppydesk to have the focus", 5*time.Second, func() bool { return d.activeWindow() == p.win })
		time.Sleep(1500 * time.Millisecond) // time for an approval to reach the Company
		if st := p.state(first); st != "waiting_for_user" {
			t.Fatalf("the click that brought the window back decided the approval: it is %q", st)
		}
	})

	d.step(t, "a screen reader is told an alert dialog opened, named by its title, with the Company and the amount", func(t *testing.T) {
		p.focusWindow()
		doc := d.a11y.document(t)
		dlg := dialogIn(doc)
		if dlg == nil {
			t.Fatalf("no approval dialog in the accessibility tree:\n%s", doc.text())
		}
		if roles := dlg.attributes()["xml-roles"]; dlg.Role != "alert" && roles != "alertdialog" {
			t.Errorf("the dialog's role is %q (xml-roles %q); want an alert dialog", dlg.Role, roles)
		}
		if dlg.Name != "Approve at Shop (reference Company)?" {
			t.Errorf("the dialog is named %q; want its title", dlg.Name)
		}
		for _, want := range []string{"Shop (reference Company)", "$70.00 USD"} {
			if !strings.Contains(dlg.Desc, want) {
				t.Errorf("the dialog's description %q does not say %q", dlg.Desc, want)
			}
		}
		if f := focused(doc); f == nil || !f.within(dlg) {
			t.Errorf("the keyboard focus is on %v, not inside the open dialog", f)
		}
		time.Sleep(1200 * time.Millisecond)
		t.Logf("screenshot: %s", d.screenshot("dialog-light.png"))
	})

	d.step(t, "focus stays inside the dialog, Escape closes it and focus returns", func(t *testing.T) {
		p.focusWindow()
		for i, k := range []string{"shift+Tab", "shift+Tab", "Tab", "Tab", "Tab", "Tab", "Tab", "Tab"} {
			p.key(k)
			doc := d.a11y.document(t)
			dlg := dialogIn(doc)
			if dlg == nil {
				t.Fatalf("after key %d (%s) the dialog is gone", i+1, k)
			}
			if f := focused(doc); f == nil || !f.within(dlg) {
				var all []string
				for _, n := range doc.all(func(n *node) bool { return n.has(stateFocused) }) {
					all = append(all, n.String())
				}
				t.Fatalf("key %d (%s) moved the focus out of the open dialog, to %v (focused: %v)", i+1, k, f, all)
			}
		}
		p.key("Escape")
		doc := d.a11y.document(t)
		if dialogIn(doc) != nil {
			t.Fatal("Escape did not close the dialog")
		}
		// Opened from its row in the list, closed with Escape: the focus is on the row again.
		row := doc.find(func(n *node) bool {
			return n.Role == "push button" && strings.Contains(n.Name, "Stormline Jacket (M)") && strings.Contains(n.Name, "Waiting")
		})
		if row == nil {
			t.Fatalf("the waiting approval is not in the list:\n%s", doc.text())
		}
		x, y := centre(t, row)
		p.clickAt(x, y)
		d.waitFor("the dialog to open from its row", 5*time.Second, func() bool { return dialogIn(d.a11y.document(t)) != nil })
		p.key("Escape")
		doc = d.a11y.document(t)
		if dialogIn(doc) != nil {
			t.Fatal("Escape did not close the dialog opened from the list")
		}
		if f := focused(doc); f == nil || f.Role != "push button" || !strings.Contains(f.Name, "Stormline Jacket (M)") {
			t.Errorf("after Escape the focus is on %v; want the row the dialog was opened from", f)
		}
	})

	d.step(t, "a burst of clicks that starts when the dialog is painted never approves", func(t *testing.T) {
		p.focusWindow()
		// fresh shows a new version of the terms in a fresh dialog (the one open closed first):
		// every such dialog has the same layout, so Approve is where it was in the last one.
		fresh := func() string {
			if dialogIn(d.a11y.document(t)) != nil {
				p.key("Escape")
			}
			before := p.shownCount()
			id := p.ask(jacketUpgrade)
			_, ms := p.waitShown(id, before)
			latencies = append(latencies, ms)
			return id
		}
		// settled waits until the window has handled every click (the page handles input
		// events later than they are sent when it is busy) and its guard has ended: Approve is
		// shown as available again. Then it checks that nothing was decided, and that (x, y) is
		// on Approve.
		settled := func(id, what string, x, y int32) {
			t.Helper()
			var ap *node
			available := func() bool {
				dlg := dialogIn(d.a11y.document(t))
				if dlg == nil {
					t.Fatalf("the dialog is gone after %s (the approval is %q)", what, p.state(id))
				}
				ap = button(dlg, "Approve")
				return ap == nil || ap.has(stateEnabled)
			}
			// A window starved of CPU handles queued clicks in bursts: Approve can show as
			// available between two of them. It has settled when it stays available for longer
			// than the guard.
			d.waitFor("Approve to stay available after "+what, 30*time.Second, func() bool {
				if !available() {
					return false
				}
				time.Sleep(1200 * time.Millisecond)
				return available()
			})
			if st := p.state(id); st != "waiting_for_user" {
				t.Fatalf("%s decided the approval: it is %q", what, st)
			}
			if ap == nil {
				t.Fatal("the dialog has no Approve button")
			}
			if ax, ay, aw, ah, _ := ap.extents(); x < ax || x > ax+aw || y < ay || y > ay+ah {
				t.Fatalf("the clicks were not on Approve (%d,%d is outside %d,%d %dx%d)", x, y, ax, ay, aw, ah)
			}
		}
		fresh() // the first version has no "what changed"; the later ones all have it
		fresh()
		dlg := dialogIn(d.a11y.document(t))
		if dlg == nil || button(dlg, "Approve") == nil {
			t.Fatal("no dialog with Approve")
		}
		x, y := centre(t, button(dlg, "Approve"))
		p.key("Escape")
		d.run("xdotool", "mousemove", "--sync", fmt.Sprint(x), fmt.Sprint(y))

		// Six clicks 100 ms apart from the moment the dialog is painted.
		id := fresh()
		d.run("xdotool", "click", "--repeat", "6", "--delay", "100", "1")
		settled(id, "six clicks from the paint of the dialog", x, y)
		// Clicks that keep coming while Approve waits restart its guard: a click every 300 ms
		// for 1.8 s approves nothing.
		id = fresh()
		d.run("xdotool", "click", "--repeat", "7", "--delay", "300", "1")
		settled(id, "clicks that kept coming during the guard", x, y)
		// Once Approve is available, one click on the same place approves.
		time.Sleep(300 * time.Millisecond)
		d.run("xdotool", "click", "1")
		d.waitFor("the approval to be performed", 15*time.Second, func() bool { return p.state(id) == "performed" })
	})

	d.step(t, "the decided record names its reference and Escape closes it", func(t *testing.T) {
		var dlg *node
		d.waitFor("the record of the decision", 10*time.Second, func() bool {
			dlg = dialogIn(d.a11y.document(t))
			return dlg != nil && dlg.find(func(n *node) bool { return n.Role == "paragraph" && strings.HasPrefix(n.content(), "Approved on") }) != nil
		})
		if ref := dlg.find(func(n *node) bool { return n.Role == "paragraph" && strings.HasPrefix(n.content(), "Reference: exc_") }); ref == nil {
			t.Errorf("the record does not name its reference (the operation and the version of its terms):\n%s", dlg.text())
		}
		if n := len(dlg.all(func(n *node) bool { return n.Name == "Details" })); n > 1 {
			t.Errorf("the record has %d controls named Details; want one", n)
		}
		t.Logf("screenshot: %s", d.screenshot("record-light.png"))
		p.key("Escape")
		if dialogIn(d.a11y.document(t)) != nil {
			t.Error("Escape did not close the record after Approve")
		}
	})

	d.step(t, "a keyboard Decline, then Escape closes the record", func(t *testing.T) {
		p.focusWindow()
		before := p.shownCount()
		id := p.ask(socksToJacket)
		_, ms := p.waitShown(id, before)
		latencies = append(latencies, ms)
		time.Sleep(1200 * time.Millisecond)
		for range 12 {
			if f := focused(d.a11y.document(t)); f != nil && f.Name == "Decline" {
				break
			}
			p.key("Tab")
		}
		if f := focused(d.a11y.document(t)); f == nil || f.Name != "Decline" {
			t.Fatalf("Tab never reached Decline (the focus is on %v)", f)
		}
		p.key("space")
		d.waitFor("the approval to be declined", 10*time.Second, func() bool { return p.state(id) == "declined" })
		doc := d.a11y.document(t)
		if f := focused(doc); f == nil || !f.within(dialogIn(doc)) {
			t.Errorf("after Decline the focus is on %v, not in the dialog", f)
		}
		p.key("Escape")
		if dialogIn(d.a11y.document(t)) != nil {
			t.Error("Escape did not close the record after a keyboard Decline")
		}
	})

	d.step(t, "the Earlier list shows its records whole", func(t *testing.T) {
		doc := d.a11y.document(t)
		rows := doc.all(func(n *node) bool {
			return n.Role == "push button" && (strings.Contains(n.Name, "Declined") || strings.Contains(n.Name, "Done"))
		})
		if len(rows) < 2 {
			t.Fatalf("the Earlier list shows %d records; want the 2 decided:\n%s", len(rows), doc.text())
		}
		var box *node
		for a := rows[0].Parent; a != nil && a != doc; a = a.Parent {
			if a.has(stateFocusable) {
				box = a
				break
			}
		}
		if box == nil {
			t.Fatal("the Earlier list has no scrolling box")
		}
		_, by, _, bh, _ := box.extents()
		for _, r := range rows {
			_, y, _, h, _ := r.extents()
			if y < by || y+h > by+bh {
				t.Errorf("the record %q is cut by the list (it spans %d–%d, the list shows %d–%d)", r.Name, y, y+h, by, by+bh)
			}
		}
		t.Logf("screenshot: %s", d.screenshot("approvals-list-light.png"))
	})

	d.step(t, "at 800×600 the dialog's buttons fit in the window", func(t *testing.T) {
		d.run("xdotool", "windowsize", "--sync", p.win, "800", "600")
		time.Sleep(300 * time.Millisecond)
		before := p.shownCount()
		id := p.ask(socksUpgrade)
		_, ms := p.waitShown(id, before)
		latencies = append(latencies, ms)
		time.Sleep(1200 * time.Millisecond)
		doc := d.a11y.document(t)
		dlg := dialogIn(doc)
		if dlg == nil {
			t.Fatal("no dialog")
		}
		t.Logf("screenshot: %s", d.screenshot("dialog-800x600-light.png"))
		dx, dy, dw, dh, _ := dlg.extents()
		wx, wy, ww, wh, _ := doc.extents()
		for _, name := range []string{"Close", "Decline", "Approve"} {
			b := button(dlg, name)
			if b == nil {
				t.Errorf("no %s button", name)
				continue
			}
			x, y, w, h, _ := b.extents()
			if x < dx || y < dy || x+w > dx+dw || y+h > dy+dh || x < wx || y < wy || x+w > wx+ww || y+h > wy+wh {
				t.Errorf("%s (%d,%d %dx%d) is outside the dialog (%d,%d %dx%d) or the window (%d,%d %dx%d)", name, x, y, w, h, dx, dy, dw, dh, wx, wy, ww, wh)
			}
		}
		p.key("Escape")
	})

	t.Logf("approval event to dialog painted, in the real window: median %.1f ms of %d (%v)", median(latencies), len(latencies), latencies)
}
