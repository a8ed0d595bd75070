//go:build realwindow

package realwindow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// A desktop of its own for one test: an X server (Xvfb), a D-Bus session bus, a window manager
// (Openbox, which manages focus and stacking as a desktop does), a notification server and a
// taskbar's listener on that bus, and the accessibility bus. Everything is started here and
// stopped when the test ends; nothing is shared with the machine's other displays or buses.
type desktop struct {
	t       *testing.T
	dir     string
	env     []string // DISPLAY, DBUS_SESSION_BUS_ADDRESS, XDG_* for every process on this desktop
	session *dbus.Conn
	a11y    *atspi
	notes   *notifications
	badges  *launcherEntries
}

// need fails the test when a program is missing, naming the Debian package that has it.
func need(t *testing.T, prog, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		t.Fatalf("%s is missing: install the Debian package %s (scripts/bootstrap.sh does)", prog, pkg)
	}
}

func startDesktop(t *testing.T, size string) *desktop {
	t.Helper()
	for _, p := range [][2]string{{"Xvfb", "xvfb"}, {"dbus-daemon", "dbus-daemon"}, {"openbox", "openbox"}, {"xdotool", "xdotool"},
		{"xprop", "x11-utils"}, {"xev", "x11-utils"}, {"import", "imagemagick"}, {"/usr/libexec/at-spi-bus-launcher", "at-spi2-core"}} {
		need(t, p[0], p[1])
	}
	dir := t.TempDir()
	d := &desktop{t: t, dir: dir}
	for _, sub := range []string{"data", "config", "state", "cache", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	// The X server picks a free display number itself and writes it to fd 3.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	xvfb := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", size+"x24", "-nolisten", "tcp")
	xvfb.ExtraFiles = []*os.File{w}
	xvfb.Stderr = logFile(t, dir, "xvfb.log")
	if err := xvfb.Start(); err != nil {
		t.Fatalf("starting Xvfb failed: %v", err)
	}
	w.Close()
	stop(t, xvfb)
	num, err := readLine(r, 10*time.Second)
	r.Close()
	if err != nil {
		t.Fatalf("Xvfb did not say its display number: %v", err)
	}

	// The session bus starts with the desktop's variables, so that the services it starts by
	// activation (the accessibility bus) live on this display and in this runtime directory.
	d.env = []string{
		"DISPLAY=:" + num,
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
	}
	ar, aw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=3")
	bus.Env = d.environ()
	bus.ExtraFiles = []*os.File{aw}
	bus.Stderr = logFile(t, dir, "dbus.log")
	if err := bus.Start(); err != nil {
		t.Fatalf("starting dbus-daemon failed: %v", err)
	}
	aw.Close()
	stop(t, bus)
	addr, err := readLine(ar, 10*time.Second)
	ar.Close()
	if err != nil {
		t.Fatalf("dbus-daemon did not say its address: %v", err)
	}
	d.env = append(d.env, "DBUS_SESSION_BUS_ADDRESS="+addr)

	wm := exec.Command("openbox", "--sm-disable")
	wm.Env = d.environ()
	wm.Stdout = logFile(t, dir, "openbox.log")
	wm.Stderr = wm.Stdout
	if err := wm.Start(); err != nil {
		t.Fatalf("starting openbox failed: %v", err)
	}
	stop(t, wm)
	// Openbox manages the screen once it owns the window manager selection.
	d.waitFor("the window manager", 10*time.Second, func() bool {
		out, _ := d.output("xprop", "-root", "_NET_SUPPORTING_WM_CHECK")
		return strings.Contains(out, "window id")
	})

	d.session, err = dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connecting to the test's session bus failed: %v", err)
	}
	t.Cleanup(func() { d.session.Close() })
	d.notes = serveNotifications(t, addr)
	d.badges = listenLauncherEntries(t, d.session)
	d.a11y = dialATSPI(t, d.session)
	return d
}

// step runs f as the subtest name of t; the desktop's helpers report to the subtest while it
// runs.
func (d *desktop) step(t *testing.T, name string, f func(t *testing.T)) bool {
	return t.Run(name, func(t *testing.T) {
		parent := d.t
		d.t = t
		defer func() { d.t = parent }()
		f(t)
	})
}

func (d *desktop) environ() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "DISPLAY", k == "DBUS_SESSION_BUS_ADDRESS", strings.HasPrefix(k, "XDG_"), k == "GTK_THEME", k == "WAYLAND_DISPLAY":
			continue
		}
		env = append(env, kv)
	}
	return append(env, d.env...)
}

// run runs a program on this desktop (xdotool, xprop, import) and fails the test if it fails.
func (d *desktop) run(name string, args ...string) string {
	d.t.Helper()
	out, err := d.output(name, args...)
	if err != nil {
		d.t.Fatalf("%s %s failed: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func (d *desktop) output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = d.environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitFor polls ok every 20 ms until it holds, or fails the test after limit.
func (d *desktop) waitFor(what string, limit time.Duration, ok func() bool) {
	d.t.Helper()
	end := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(end) {
			d.t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// activeWindow is the window the window manager gives the focus to (_NET_ACTIVE_WINDOW).
func (d *desktop) activeWindow() string {
	out, err := d.output("xdotool", "getactivewindow")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// stacking lists the managed windows bottom to top (_NET_CLIENT_LIST_STACKING).
func (d *desktop) stacking() []string {
	out, _ := d.output("xprop", "-root", "_NET_CLIENT_LIST_STACKING")
	_, list, _ := strings.Cut(out, "#")
	var ids []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if n, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64); err == nil {
			ids = append(ids, strconv.FormatUint(n, 10))
		}
	}
	return ids
}

// above says whether window a is stacked above window b.
func (d *desktop) above(a, b string) bool {
	ia, ib := -1, -1
	for i, w := range d.stacking() {
		switch w {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	return ia > ib && ib >= 0
}

// geometry is the window's place and size on the screen.
func (d *desktop) geometry(win string) (x, y, w, h int32) {
	out, _ := d.output("xdotool", "getwindowgeometry", "--shell", win)
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(l, "=")
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		switch k {
		case "X":
			x = int32(n)
		case "Y":
			y = int32(n)
		case "WIDTH":
			w = int32(n)
		case "HEIGHT":
			h = int32(n)
		}
	}
	return x, y, w, h
}

// netState is the window's _NET_WM_STATE atoms (for example _NET_WM_STATE_DEMANDS_ATTENTION).
func (d *desktop) netState(win string) string {
	out, _ := d.output("xprop", "-id", win, "_NET_WM_STATE")
	return out
}

// screenshot saves the whole screen as name under the test's output folder and returns its path.
func (d *desktop) screenshot(name string) string {
	d.t.Helper()
	dir := outDir(d.t)
	p := filepath.Join(dir, name)
	d.run("import", "-window", "root", p)
	return p
}

// windowShot saves the window win (its content, without the window manager's frame) as name
// under the test's output folder and returns its path.
func (d *desktop) windowShot(win, name string) string {
	d.t.Helper()
	p := filepath.Join(outDir(d.t), name)
	d.run("import", "-window", win, p)
	return p
}

// outDir is where screenshots and logs stay after the test: $POPPYDESK_WINDOW_OUT, default
// out/realwindow at the repository's root.
func outDir(t *testing.T) string {
	dir := os.Getenv("POPPYDESK_WINDOW_OUT")
	if dir == "" {
		dir = filepath.Join("..", "..", "out", "realwindow")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// otherApp opens another application's window (xev, which prints every key it receives) and
// gives it the focus, as a user working in another program.
type otherApp struct {
	win string
	out *syncBuffer
}

func (d *desktop) openOtherApp() *otherApp {
	d.t.Helper()
	o := &otherApp{out: &syncBuffer{}}
	cmd := exec.Command("xev", "-name", "other-app", "-geometry", "500x400+700+350", "-event", "keyboard")
	cmd.Env = d.environ()
	cmd.Stdout = o.out
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("starting xev failed: %v", err)
	}
	stop(d.t, cmd)
	d.waitFor("the other application's window", 10*time.Second, func() bool {
		out, err := d.output("xdotool", "search", "--onlyvisible", "--name", "^other-app$")
		o.win, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
		return err == nil && o.win != ""
	})
	d.run("xdotool", "windowactivate", "--sync", o.win)
	d.waitFor("the other application to have the focus", 5*time.Second, func() bool { return d.activeWindow() == o.win })
	return o
}

// keys is what the other application received as key presses (xev's KeyPress lines).
func (o *otherApp) keys() string {
	var got []string
	re := regexp.MustCompile(`keysym 0x[0-9a-f]+, (\w+)\)`)
	inPress := false
	for _, l := range strings.Split(o.out.String(), "\n") {
		if strings.HasPrefix(l, "KeyPress") {
			inPress = true
			continue
		}
		if inPress {
			if m := re.FindStringSubmatch(l); m != nil {
				got = append(got, m[1])
				inPress = false
			}
		}
	}
	return strings.Join(got, " ")
}

// notifications is a desktop notification server (org.freedesktop.Notifications) on the
// test's session bus that records what it is asked to show.
type notifications struct {
	mu   sync.Mutex
	seen []string // "summary: body"
}

func (n *notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = append(n.seen, summary+": "+body)
	return uint32(len(n.seen)), nil
}

func (n *notifications) GetCapabilities() ([]string, *dbus.Error) { return []string{"body"}, nil }

func (n *notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "realwindow-test", "poppydesk", "1", "1.2", nil
}

func (n *notifications) shown() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.seen...)
}

func serveNotifications(t *testing.T, addr string) *notifications {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	n := &notifications{}
	if err := conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("serving org.freedesktop.Notifications failed: %v (%v)", err, reply)
	}
	return n
}

// launcherEntries records the launcher (taskbar) entry updates an application sends
// (com.canonical.Unity.LauncherEntry.Update, which docks and taskbars show as a count on the
// application's icon).
type launcherEntries struct {
	mu    sync.Mutex
	count int64
	seen  bool
}

func listenLauncherEntries(t *testing.T, conn *dbus.Conn) *launcherEntries {
	t.Helper()
	l := &launcherEntries{}
	if err := conn.AddMatchSignal(dbus.WithMatchInterface("com.canonical.Unity.LauncherEntry"), dbus.WithMatchMember("Update")); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *dbus.Signal, 16)
	conn.Signal(ch)
	go func() {
		for s := range ch {
			if s.Name != "com.canonical.Unity.LauncherEntry.Update" || len(s.Body) < 2 {
				continue
			}
			props, _ := s.Body[1].(map[string]dbus.Variant)
			l.mu.Lock()
			if c, ok := props["count"]; ok {
				l.count, _ = c.Value().(int64)
				l.seen = true
			}
			if v, ok := props["count-visible"]; ok {
				if vis, _ := v.Value().(bool); !vis {
					l.count = 0
				}
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// badge is the count the application shows on its taskbar entry (-1 before any update).
func (l *launcherEntries) badge() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen {
		return -1
	}
	return l.count
}

// ---- small helpers

func logFile(t *testing.T, dir, name string) *os.File {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// stop ends cmd when the test ends (SIGTERM, then SIGKILL after 3 s).
func stop(t *testing.T, cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
			return
		default:
		}
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

func readLine(r *os.File, limit time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := bufio.NewReader(r).ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case x := <-ch:
		if x.s == "" && x.err != nil {
			return "", x.err
		}
		return x.s, nil
	case <-time.After(limit):
		return "", errors.New("timed out")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logLines reads the app's JSON log and returns the entries whose msg is msg.
func logLines(path, msg string) []map[string]any {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []map[string]any
	needle := []byte(`"msg":` + strconv.Quote(msg))
	for _, l := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(l, needle) {
			continue
		}
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
