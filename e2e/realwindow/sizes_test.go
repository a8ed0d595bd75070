//go:build realwindow

package realwindow

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The window's sections in the order the navigation lists them.
var sections = []string{"Approvals", "Companies", "Sign-in", "Conversations", "Browser", "Inspector", "Settings"}

// TestWindowSizes opens every section of the release window at the smallest size it supports
// (800×600) and at a common full screen (1920×1080) and reads each through the accessibility
// tree: nothing runs off the window to the side, the navigation shows each entry's label whole,
// the top bar's status line shows its first word, and the exchange opened in the Inspector is in
// view and inside the window. Each section is photographed.
func TestWindowSizes(t *testing.T) {
	d := startDesktop(t, "2000x1200")
	p := d.launch()
	p.focusWindow()
	// The Inspector has an exchange to open: the model asks for one (then the dialog is closed).
	before := p.shownCount()
	p.waitShown(p.ask(jacketUpgrade), before)
	p.key("Escape")

	for _, size := range [][2]int{{800, 600}, {1920, 1080}} {
		w, h := size[0], size[1]
		d.step(t, fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			d.run("xdotool", "windowsize", "--sync", p.win, fmt.Sprint(w), fmt.Sprint(h))
			time.Sleep(300 * time.Millisecond)
			for _, name := range sections {
				doc := p.open(name)
				// The page's extents are its content's: a page larger than the window scrolls.
				wx, _, dw, dh, _ := doc.extents()
				if dw != int32(w) || dh != int32(h) {
					t.Errorf("%s: the page is %dx%d in a window of %dx%d: it scrolls", name, dw, dh, w, h)
				}
				ww := int32(w)
				for _, n := range doc.all(func(n *node) bool { return n.has(stateShowing) && n != doc }) {
					x, _, nw, nh, err := n.extents()
					if err != nil || nw <= 0 || nh <= 0 {
						continue
					}
					if x < wx-1 || x+nw > wx+ww+1 {
						t.Errorf("%s at %dx%d: %v runs off the window to the side (x %d to %d; the window is %d to %d)", name, w, h, n, x, x+nw, wx, wx+ww)
					}
				}
				p.navigationWhole(t, doc, name, w, h)
				p.statusShown(t, doc, name, w, h)
				if name == "Inspector" {
					p.openExchange(t, w, h)
				}
				t.Logf("screenshot: %s", d.windowShot(p.win, fmt.Sprintf("%s-%dx%d.png", strings.ToLower(name), w, h)))
			}
		})
	}
}

// open shows section name by a click on its navigation entry and returns the page once the
// section's heading says so.
func (p *poppydesk) open(name string) *node {
	t := p.d.t
	t.Helper()
	doc := p.d.a11y.document(t)
	link := doc.find(func(n *node) bool { return n.Role == "link" && strings.HasPrefix(n.Name, name) })
	if link == nil {
		t.Fatalf("the navigation has no entry %s:\n%s", name, doc.text())
	}
	x, y := centre(t, link)
	p.clickAt(x, y)
	p.d.waitFor("the section "+name, 10*time.Second, func() bool {
		doc = p.d.a11y.document(t)
		return doc.find(func(n *node) bool { return n.Role == "heading" && n.Name == name }) != nil
	})
	time.Sleep(300 * time.Millisecond)
	return p.d.a11y.document(t)
}

// openExchange opens the first exchange on the Inspector's timeline and checks that its detail
// comes into view and stays inside the window.
func (p *poppydesk) openExchange(t *testing.T, w, h int) {
	t.Helper()
	doc := p.d.a11y.document(t)
	row := doc.find(func(n *node) bool { return n.Role == "push button" && strings.Contains(n.Name, "GET") })
	if row == nil {
		t.Fatalf("the Inspector's timeline has no exchange:\n%s", doc.text())
	}
	x, y := centre(t, row)
	p.clickAt(x, y)
	var entry *node
	p.d.waitFor("the exchange's detail", 10*time.Second, func() bool {
		doc = p.d.a11y.document(t)
		entry = doc.find(func(n *node) bool { return n.Role == "heading" && strings.Contains(n.Name, "GET") })
		return entry != nil
	})
	time.Sleep(300 * time.Millisecond) // a scroll into view
	doc = p.d.a11y.document(t)
	entry = doc.find(func(n *node) bool { return n.Role == "heading" && strings.Contains(n.Name, "GET") })
	wx, wy, ww, wh, _ := doc.extents()
	if _, y, _, eh, _ := entry.extents(); y < wy || y+eh > wy+wh {
		t.Errorf("at %dx%d the exchange opened is out of view (its heading spans y %d to %d; the window, %d to %d)", w, h, y, y+eh, wy, wy+wh)
	}
	for a := entry; a != nil && a != doc; a = a.Parent {
		x, _, nw, _, _ := a.extents()
		if x < wx || x+nw > wx+ww {
			t.Errorf("at %dx%d the exchange's detail (%v, x %d to %d) runs off the window (x %d to %d)", w, h, a, x, x+nw, wx, wx+ww)
		}
	}
}

// navigationWhole checks that every navigation entry shows its label whole: the label's text ends
// inside the entry's box with room to spare, and no entry is wider than the narrowest (WebKit
// reports an entry whose label runs out of it as wider than its box), badges included.
func (p *poppydesk) navigationWhole(t *testing.T, doc *node, section string, w, h int) {
	t.Helper()
	var links []*node
	for _, entry := range sections {
		link := doc.find(func(n *node) bool { return n.Role == "link" && strings.HasPrefix(n.Name, entry) })
		if link == nil {
			t.Errorf("%s at %dx%d: the navigation has no entry %s", section, w, h, entry)
			return
		}
		links = append(links, link)
	}
	narrowest := int32(1 << 30)
	for _, l := range links {
		if _, _, lw, _, _ := l.extents(); lw < narrowest {
			narrowest = lw
		}
	}
	const room = 6 // px between a label's end and its entry's edge
	for i, l := range links {
		lx, _, _, _, _ := l.extents()
		tx, _, tw, _, err := l.rangeExtents(0, len([]rune(sections[i])))
		if err != nil || tw <= 0 {
			t.Errorf("%s at %dx%d: the navigation entry %s has no text on the screen: %v", section, w, h, sections[i], err)
			continue
		}
		if tx < lx || tx+tw > lx+narrowest-room {
			t.Errorf("%s at %dx%d: the navigation entry %q is cut (its text spans x %d to %d; the entry, %d to %d)", section, w, h, sections[i], tx, tx+tw, lx, lx+narrowest)
		}
		for _, k := range l.all(func(n *node) bool { return n != l && n.has(stateShowing) }) {
			if x, _, kw, _, err := k.extents(); err == nil && kw > 0 && x+kw > lx+narrowest {
				t.Errorf("%s at %dx%d: %v in the navigation entry %q runs out of it (to x %d; the entry ends at %d)", section, w, h, k, sections[i], x+kw, lx+narrowest)
			}
		}
	}
}

// statusShown checks that the top bar's status line shows at least its first word whole.
func (p *poppydesk) statusShown(t *testing.T, doc *node, section string, w, h int) {
	t.Helper()
	status := doc.find(func(n *node) bool { return n.attributes()["xml-roles"] == "status" })
	if status == nil {
		t.Errorf("%s at %dx%d: no status line in the top bar", section, w, h)
		return
	}
	text := status.content()
	first, _, _ := strings.Cut(text, " ")
	if first == "" {
		t.Errorf("%s at %dx%d: the status line is empty", section, w, h)
		return
	}
	// An ellipsis leaves the characters it hides collapsed at its place: each character of the
	// word must start after the one before it (which it may overlap by a kerning's few pixels),
	// inside the line.
	sx, _, sw, _, _ := status.extents()
	prevX, prevEnd := sx-1, sx
	for i := range []rune(first) {
		cx, _, cw, _, err := status.charExtents(i)
		if err != nil || cw <= 0 || cx <= prevX || cx < prevEnd-4 || cx+cw > sx+sw {
			t.Errorf("%s at %dx%d: the status line %q does not show its first word whole: character %d is at x %d to %d after the one before at %d to %d, in a line from %d to %d (%v)", section, w, h, text, i, cx, cx+cw, prevX, prevEnd, sx, sx+sw, err)
			return
		}
		prevX, prevEnd = cx, cx+cw
	}
}
