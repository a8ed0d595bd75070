//go:build realwindow

package realwindow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// poppydesk is the release binary running `poppydesk demo` on a desktop, and a model connected
// to its socket.
type poppydesk struct {
	d      *desktop
	cmd    *exec.Cmd
	exited chan struct{}
	log    string // the app's log file
	win    string // its X window
	domain string // the reference Company's domain (shop.localhost:PORT)
	model  *mcp.ClientSession
	asked  time.Time // when the model last asked for an exchange
	// launched is when the process was started.
	launched time.Time
}

// binary is the release build under test: $POPPYDESK_BIN, default build/bin/poppydesk.
func binary(t *testing.T) string {
	p := os.Getenv("POPPYDESK_BIN")
	if p == "" {
		p = filepath.Join("..", "..", "build", "bin", "poppydesk")
	}
	abs, _ := filepath.Abs(p)
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("the release binary %s is missing: run `make build` first (or set POPPYDESK_BIN)", abs)
	}
	return abs
}

// launch starts `poppydesk demo` with extra environment variables and waits until its window
// shows data from Go and its demo account is signed in.
func (d *desktop) launch(extraEnv ...string) *poppydesk {
	t := d.t
	t.Helper()
	p := &poppydesk{d: d, exited: make(chan struct{}), log: filepath.Join(d.dir, "state", "poppydesk", "poppydesk.log"), launched: time.Now()}
	// --debug: the log a failing test keeps says what the Host decided (focus, notifications).
	p.cmd = exec.Command(binary(t), "demo", "--debug")
	p.cmd.Env = append(d.environ(), extraEnv...)
	p.cmd.Stdout = logFile(t, d.dir, "app.stdout")
	p.cmd.Stderr = logFile(t, d.dir, "app.stderr")
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s failed: %v", p.cmd.Path, err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.quit)
	d.waitFor("the window to show data from Go", 60*time.Second, func() bool {
		if !p.running() {
			t.Fatalf("poppydesk demo exited before its window was ready (see %s)", filepath.Join(d.dir, "app.stderr"))
		}
		return len(logLines(p.log, "window frontend ready")) > 0 && len(logLines(p.log, "signed in")) > 0
	})
	p.findWindow()
	listening := logLines(p.log, "model interface listening")
	if len(listening) == 0 {
		t.Fatal("the app's log does not say where the model interface listens")
	}
	socket, _ := listening[0]["socket"].(string)
	raw, _ := os.ReadFile(p.log)
	m := regexp.MustCompile(`https://auth\.(shop\.localhost:\d+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the app's log does not name the reference Company")
	}
	p.domain = string(m[1])

	// The model: an MCP client on the app's socket, as `poppydesk mcp` relays one.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := modelapi.Dial(ctx, socket)
	if err != nil {
		t.Fatalf("connecting to the model socket %s failed: %v", socket, err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "realwindow-test", Version: "1"}, nil)
	p.model, err = c.Connect(context.Background(), &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatalf("the MCP session on the model socket did not start: %v", err)
	}
	t.Cleanup(func() { p.model.Close() })
	if st, _ := p.tool(modelapi.ToolDiscoverCompany, map[string]any{"domain": p.domain}); st != modelapi.StatusOK {
		t.Fatalf("discover_company answered %q", st)
	}
	return p
}

// findWindow waits for the Poppydesk window on the screen and keeps its X window.
func (p *poppydesk) findWindow() {
	p.d.waitFor("the Poppydesk window", 10*time.Second, func() bool {
		out, err := p.d.output("xdotool", "search", "--onlyvisible", "--name", "^Poppydesk$")
		p.win, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
		return err == nil && p.win != ""
	})
}

// quit ends the app as a session's logout does (SIGINT, then SIGKILL after 15 s) and, when the
// test failed, keeps the app's log beside its screenshots.
func (p *poppydesk) quit() {
	t := p.d.t
	if p.running() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if t.Failed() {
		if b, err := os.ReadFile(p.log); err == nil {
			os.WriteFile(filepath.Join(outDir(t), strings.ReplaceAll(t.Name(), "/", "_")+".log"), b, 0o644)
		}
	}
}

func (p *poppydesk) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tool calls one of the model's tools and returns its status and structured content.
func (p *poppydesk) tool(name string, args map[string]any) (string, map[string]any) {
	p.d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.model.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		p.d.t.Fatalf("%s failed: %v", name, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	st, _ := sc["status"].(string)
	return st, sc
}

// exchange is one exchange the reference Company sells: order, item and replacement.
type exchange struct{ order, item, sku string }

var (
	jacketUpgrade = exchange{"ord_7Hk2", "itm_4Qa", "stormline-insulated-m"} // $70.00 more
	socksToJacket = exchange{"ord_1", "itm_1", "stormline-m"}                // $117.00 more
	socksUpgrade  = exchange{"ord_7Hk2", "itm_9Zt", "stormline-insulated-l"} // $187.00 more
)

// ask has the model ask for the exchange, which needs the user's approval; it returns the
// approval's handle.
func (p *poppydesk) ask(e exchange) string {
	p.d.t.Helper()
	// The reference Company's terms expire at a whole second: asks at least a second apart give
	// every new version an expiry of its own, so each dialog shows what changed the same way.
	if wait := time.Until(p.asked.Add(1100 * time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	defer func() { p.asked = time.Now() }()
	st, sc := p.tool(modelapi.ToolCallAPIOperation, map[string]any{"company": p.domain, "operation_id": "exchangeItem",
		"path_params": map[string]any{"id": e.order},
		"body":        map[string]any{"item_id": e.item, "replacement_sku": e.sku}})
	if st != modelapi.StatusWaitingForUser {
		p.d.t.Fatalf("asking for the exchange %v answered %q: %v", e, st, sc["message"])
	}
	id, _ := sc["approval_id"].(string)
	return id
}

// state is the approval's status as the model reads it (get_approval).
func (p *poppydesk) state(id string) string {
	p.d.t.Helper()
	st, _ := p.tool(modelapi.ToolGetApproval, map[string]any{"approval_id": id})
	return st
}

// shownCount is how many times the window has reported a painted approval dialog.
func (p *poppydesk) shownCount() int { return len(logLines(p.log, "approval dialog shown")) }

// waitShown waits until the window reports the dialog of approval id painted after the count
// given, and returns the time the test saw it and the latency the Host measured.
func (p *poppydesk) waitShown(id string, after int) (time.Time, float64) {
	p.d.t.Helper()
	var ms float64
	p.d.waitFor("the approval dialog on screen", 15*time.Second, func() bool {
		lines := logLines(p.log, "approval dialog shown")
		for _, l := range lines[min(after, len(lines)):] {
			if l["approval"] == id {
				ms, _ = l["since_event_ms"].(float64)
				var steps []string
				for k, v := range l {
					if strings.HasPrefix(k, "window_") {
						steps = append(steps, fmt.Sprintf("%s=%v", strings.TrimPrefix(k, "window_"), v))
					}
				}
				sort.Strings(steps)
				p.d.t.Logf("the dialog of %s painted %.1f ms after the Host sent its event (the window's own steps, from the event's arrival: %s)", id, ms, strings.Join(steps, " "))
				return true
			}
		}
		return false
	})
	return time.Now(), ms
}

// key sends X key events to whichever window has the focus, as a keyboard does.
func (p *poppydesk) key(keys ...string) {
	p.d.run("xdotool", append([]string{"key", "--delay", "60"}, keys...)...)
	time.Sleep(150 * time.Millisecond)
}

// clickAt moves the pointer to (x, y) on the screen and clicks there.
func (p *poppydesk) clickAt(x, y int32) {
	p.d.run("xdotool", "mousemove", "--sync", fmt.Sprint(x), fmt.Sprint(y), "click", "1")
}

// centre is the middle of an accessible object on the screen.
func centre(t *testing.T, n *node) (int32, int32) {
	t.Helper()
	x, y, w, h, err := n.extents()
	if err != nil || w <= 0 || h <= 0 {
		t.Fatalf("%s has no place on the screen (%d,%d %dx%d): %v", n, x, y, w, h, err)
	}
	return x + w/2, y + h/2
}

// focusWindow gives the Poppydesk window the focus, as a click on its title bar does.
func (p *poppydesk) focusWindow() {
	p.d.run("xdotool", "windowactivate", "--sync", p.win)
	p.d.waitFor("Poppydesk to have the focus", 5*time.Second, func() bool { return p.d.activeWindow() == p.win })
	time.Sleep(200 * time.Millisecond)
}

// dialog is the approval dialog in the accessibility tree (nil when none is open).
func dialogIn(doc *node) *node {
	return doc.find(func(n *node) bool {
		return (n.Role == "dialog" || n.Role == "alert") && strings.Contains(n.Name, "Shop")
	})
}

// button is the push button named name inside n (nil when none).
func button(n *node, name string) *node {
	return n.find(func(x *node) bool { return x.Role == "push button" && x.Name == name })
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
