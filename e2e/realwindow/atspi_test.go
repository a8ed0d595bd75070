//go:build realwindow

package realwindow

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// The accessibility tree as a screen reader reads it: AT-SPI 2 over its own D-Bus bus, spoken
// with github.com/godbus/dbus/v5. The session bus names the accessibility bus
// (org.a11y.Bus.GetAddress, which starts at-spi-bus-launcher by D-Bus activation); on it the
// registry lists the applications, and each accessible object answers the
// org.a11y.atspi.Accessible and org.a11y.atspi.Component interfaces. GTK loads its AT-SPI bridge
// by itself and WebKitGTK exposes the page's accessibility tree under the window's own, so
// nothing in Poppydesk's environment turns accessibility on.

const (
	atspiRegistry   = "org.a11y.atspi.Registry"
	atspiRoot       = dbus.ObjectPath("/org/a11y/atspi/accessible/root")
	atspiAccessible = "org.a11y.atspi.Accessible"
	atspiComponent  = "org.a11y.atspi.Component"
	atspiText       = "org.a11y.atspi.Text"
)

// AT-SPI state bits (AtspiStateType).
const (
	stateEnabled   = 8
	stateFocusable = 11
	stateFocused   = 12
	stateShowing   = 25
)

// roleNames are the names libatspi gives the roles these tests look for (AtspiRole); WebKit's
// objects answer GetRole, not GetRoleName.
var roleNames = map[uint32]string{2: "alert", 16: "dialog", 20: "filler", 23: "frame", 29: "label", 39: "panel", 43: "push button",
	49: "scroll pane", 55: "table", 73: "paragraph", 75: "application", 83: "heading", 85: "section", 88: "link", 95: "document web",
	99: "grouping", 110: "landmark", 116: "static"}

func roleName(r uint32) string {
	if s, ok := roleNames[r]; ok {
		return s
	}
	return fmt.Sprintf("role %d", r)
}

// atspi is a connection to the accessibility bus.
type atspi struct {
	conn *dbus.Conn
}

func dialATSPI(t *testing.T, session *dbus.Conn) *atspi {
	t.Helper()
	var addr string
	var err error
	for range 50 {
		if err = session.Object("org.a11y.Bus", "/org/a11y/bus").Call("org.a11y.Bus.GetAddress", 0).Store(&addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the accessibility bus did not start (org.a11y.Bus.GetAddress: %v); is at-spi2-core installed?", err)
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connecting to the accessibility bus %s failed: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &atspi{conn: conn}
}

// node is one accessible object, with what the tests read of it.
type node struct {
	a      *atspi
	ref    ref
	Role   string
	Name   string
	Desc   string
	States [2]uint32
	Parent *node
	Kids   []*node
}

type ref struct {
	Bus  string
	Path dbus.ObjectPath
}

func (n *node) has(state uint) bool { return n.States[state/32]&(1<<(state%32)) != 0 }

func (n *node) String() string {
	return fmt.Sprintf("%s %q", n.Role, n.Name)
}

// within says whether n is anc or one of its descendants.
func (n *node) within(anc *node) bool {
	for p := n; p != nil; p = p.Parent {
		if p.ref == anc.ref {
			return true
		}
	}
	return false
}

// find returns the first node in n's subtree (n included, depth first) for which ok holds.
func (n *node) find(ok func(*node) bool) *node {
	if ok(n) {
		return n
	}
	for _, k := range n.Kids {
		if f := k.find(ok); f != nil {
			return f
		}
	}
	return nil
}

// all returns every node in n's subtree for which ok holds.
func (n *node) all(ok func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		if ok(x) {
			out = append(out, x)
		}
		for _, k := range x.Kids {
			walk(k)
		}
	}
	walk(n)
	return out
}

// text is the names and texts of n's subtree, joined (what a screen reader would read in it,
// roughly).
func (n *node) text() string {
	var b []string
	for _, x := range n.all(func(*node) bool { return true }) {
		if x.Name != "" {
			b = append(b, x.Name)
		}
		if c := strings.TrimSpace(x.content()); c != "" && c != x.Name {
			b = append(b, c)
		}
	}
	return strings.Join(b, " ")
}

// extents is the node's rectangle on the screen.
func (n *node) extents() (x, y, w, h int32, err error) {
	var r struct{ X, Y, W, H int32 }
	err = n.a.conn.Object(n.ref.Bus, n.ref.Path).Call(atspiComponent+".GetExtents", 0, uint32(0)).Store(&r)
	return r.X, r.Y, r.W, r.H, err
}

// rangeExtents is the rectangle on the screen of the node's own text from character start to
// end (org.a11y.atspi.Text), where the text is laid out whether or not it is clipped.
func (n *node) rangeExtents(start, end int) (x, y, w, h int32, err error) {
	err = n.a.conn.Object(n.ref.Bus, n.ref.Path).Call(atspiText+".GetRangeExtents", 0, int32(start), int32(end), uint32(0)).Store(&x, &y, &w, &h)
	return x, y, w, h, err
}

// charExtents is the rectangle on the screen of the node's own text's character i.
func (n *node) charExtents(i int) (x, y, w, h int32, err error) {
	err = n.a.conn.Object(n.ref.Bus, n.ref.Path).Call(atspiText+".GetCharacterExtents", 0, int32(i), uint32(0)).Store(&x, &y, &w, &h)
	return x, y, w, h, err
}

// content is the node's own text (org.a11y.atspi.Text: a paragraph's words, which are not its
// name), "" when it has none; each child object in it is one U+FFFC.
func (n *node) content() string {
	var s string
	if err := n.a.conn.Object(n.ref.Bus, n.ref.Path).Call(atspiText+".GetText", 0, int32(0), int32(-1)).Store(&s); err != nil {
		return ""
	}
	return strings.ReplaceAll(s, "\ufffc", "")
}

// attributes are the node's object attributes (WebKit puts the ARIA role in "xml-roles").
func (n *node) attributes() map[string]string {
	var m map[string]string
	if err := n.a.conn.Object(n.ref.Bus, n.ref.Path).Call(atspiAccessible+".GetAttributes", 0).Store(&m); err != nil {
		return nil
	}
	return m
}

func (a *atspi) read(r ref, parent *node, depth int) (*node, error) {
	obj := a.conn.Object(r.Bus, r.Path)
	n := &node{a: a, ref: r, Parent: parent}
	var role uint32
	if err := obj.Call(atspiAccessible+".GetRole", 0).Store(&role); err != nil {
		return nil, err
	}
	n.Role = roleName(role)
	name, err := obj.GetProperty(atspiAccessible + ".Name")
	if err != nil {
		return nil, err
	}
	n.Name, _ = name.Value().(string)
	if desc, err := obj.GetProperty(atspiAccessible + ".Description"); err == nil {
		n.Desc, _ = desc.Value().(string)
	}
	var st []uint32
	if err := obj.Call(atspiAccessible+".GetState", 0).Store(&st); err == nil && len(st) == 2 {
		n.States = [2]uint32{st[0], st[1]}
	}
	if depth > 80 {
		return n, nil
	}
	// ChildCount and GetChildAtIndex, not GetChildren: the page's tree is plugged into the
	// window's from another process, and only these cross the plug.
	cv, err := obj.GetProperty(atspiAccessible + ".ChildCount")
	if err != nil {
		return nil, err
	}
	count, _ := cv.Value().(int32)
	for i := range count {
		var k ref
		if err := obj.Call(atspiAccessible+".GetChildAtIndex", 0, i).Store(&k); err != nil {
			continue
		}
		if k.Path == "/org/a11y/atspi/null" {
			continue
		}
		c, err := a.read(k, n, depth+1)
		if err != nil {
			continue // an object that went away while the tree was read
		}
		n.Kids = append(n.Kids, c)
	}
	return n, nil
}

// app reads the whole tree of the application named name ("poppydesk").
func (a *atspi) app(name string) (*node, error) {
	var apps []ref
	if err := a.conn.Object(atspiRegistry, atspiRoot).Call(atspiAccessible+".GetChildren", 0).Store(&apps); err != nil {
		return nil, fmt.Errorf("listing the accessible applications failed: %w", err)
	}
	var names []string
	for _, r := range apps {
		v, err := a.conn.Object(r.Bus, r.Path).GetProperty(atspiAccessible + ".Name")
		if err != nil {
			continue
		}
		s, _ := v.Value().(string)
		names = append(names, s)
		if s == name {
			return a.read(r, nil, 0)
		}
	}
	return nil, fmt.Errorf("no accessible application %q (there are: %s)", name, strings.Join(names, ", "))
}

// document is the web page of the window (the node WebKit gives the role "document web").
func (a *atspi) document(t *testing.T) *node {
	t.Helper()
	var last error
	for range 100 {
		root, err := a.app("poppydesk")
		if err == nil {
			if d := root.find(func(n *node) bool { return n.Role == "document web" }); d != nil {
				return d
			}
			err = fmt.Errorf("the window has no web document in its accessibility tree")
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("reading the window's accessibility tree failed: %v", last)
	return nil
}

// focused is the node that has the keyboard focus in the document (nil when none inside it):
// the deepest focused node.
func focused(doc *node) *node {
	var f *node
	for _, n := range doc.all(func(n *node) bool { return n.has(stateFocused) }) {
		f = n
	}
	if f == doc {
		return nil
	}
	return f
}
