package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// walkStep is one line of the command block docs/DEVELOPERS.md marks as walked: the command's
// words (from `poppydesk` on) and the words of its comment, which state its result.
type walkStep struct {
	line    string
	args    []string
	comment string
}

// walkedCommands reads the fenced block that follows the line naming TestDevelopersDocWalk in
// the document, so the test runs the document's own commands in the document's order.
func walkedCommands(t *testing.T, doc string) []walkStep {
	t.Helper()
	m := regexp.MustCompile("(?s)TestDevelopersDocWalk[^\n]*\n```[a-z]*\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/DEVELOPERS.md has no fenced block after a line naming TestDevelopersDocWalk")
	}
	var steps []walkStep
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		cmd, comment, _ := strings.Cut(line, " #")
		words := strings.Fields(cmd)
		if len(words) < 2 || words[0] != "poppydesk" {
			t.Fatalf("the walked block of docs/DEVELOPERS.md has a line that is not a poppydesk command: %q", line)
		}
		steps = append(steps, walkStep{line: strings.TrimSpace(line), args: words[1:], comment: comment})
	}
	return steps
}

// walkCompany is a running `poppydesk company serve` of the walk and its JSON line.
type walkCompany struct {
	Domain  string   `json:"domain"`
	CACert  string   `json:"ca_cert"`
	AgentCA string   `json:"agent_ca"`
	Faults  []string `json:"faults"`
	caPEM   []byte   // the ca_cert file's content when it started
	proc    *walkProcess
}

// walkProcess is a long-running command of the walk (the window, a Company) and what it wrote.
type walkProcess struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

// startWalkProcess starts bin with args in env and returns it with its first stdout line (up to
// 90 s). The process gets SIGTERM when the test ends, if it still runs.
func startWalkProcess(t *testing.T, bin, dir string, env, args []string) (*walkProcess, string) {
	t.Helper()
	p := &walkProcess{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Dir, p.cmd.Env, p.cmd.Stderr = dir, env, &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting poppydesk %s: %v", strings.Join(args, " "), err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = r.WriteTo(io.Discard)
	}()
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	select {
	case line := <-lines:
		if line == "" {
			t.Fatalf("poppydesk %s printed nothing; stderr:\n%s", strings.Join(args, " "), p.stderr.String())
		}
		return p, line
	case <-time.After(90 * time.Second):
		t.Fatalf("poppydesk %s printed nothing within 90 s; stderr:\n%s", strings.Join(args, " "), p.stderr.String())
	}
	return nil, ""
}

// stop ends the process as Ctrl-C does and requires a clean exit within 15 s.
func (p *walkProcess) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Errorf("poppydesk %s ended with %v after Ctrl-C; stderr:\n%s", strings.Join(p.cmd.Args[1:], " "), err, p.stderr.String())
		}
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("poppydesk %s did not stop within 15 s of Ctrl-C", strings.Join(p.cmd.Args[1:], " "))
	}
}

// TestDevelopersDocWalk runs the command block of docs/DEVELOPERS.md section 2 as a Company
// developer on a clean machine types it: a fresh home folder (HOME and every XDG folder empty),
// the Secret Service of scripts/with-keyring.sh (fresh each run), the poppydesk binary built
// from this module by `go build` (not build/bin/poppydesk: `make build` makes the release build,
// which has no --e2e-listen, and may be older than the tree), each line in the document's order,
// and each line's result as the document states it:
//
//   - `window`: runs with --e2e-listen instead of opening the window, so nothing is drawn (the
//     Host starts as the window starts it; the test clicks through the window's services over
//     its bridge, as the frontend calls them). It must leave the developer CA at
//     DATA/developer/poppydesk-agent-ca.pem, and Settings → Developer mode must show the
//     --dev-company and --dev-ca it was given (without them, what was entered in Settings), that
//     CA and the client_id of the first start. A line whose comment says "enter DOMAIN and
//     CA_CERT in Settings" enters them in Settings → Developer mode instead, which must say a
//     restart is needed. With a Company running, Companies → Discover must find it (where
//     developer mode is on). A line whose comment says
//     "quit it" is stopped with Ctrl-C at once; otherwise it runs until the next window line or
//     the end.
//   - `company serve`: runs until the next `company serve` line (stopped with Ctrl-C before it)
//     or the end; its JSON line names its domain, its CA file (which exists) and, without
//     --agent-ca, the developer CA as agent_ca; started again with the same --state, the same
//     domain and CA (the file's content too), and the running window discovers it again at
//     once, or, started with a --fault, its Discover fails at once.
//   - `discover`: exit 0 and the Company as JSON with that domain;
//   - `check`: exit 0 with PASS lines and no FAIL, or, where the line's comment says "exit 1:
//     FAIL MUST, WORDS", exit 1 with a MUST failure that says WORDS; stderr names the developer
//     CA the Company must trust and the client_id check acts as, which must be the one Settings
//     showed at the window's first start, whether a window runs or not; --har writes an
//     archive of the exchanges.
//
// DOMAIN and CA_CERT are replaced by the running Company's domain and ca_cert, ~ by the home
// folder. A line of the block whose subcommand the test does not know fails the test. Not
// walked: sign-in, operations and approvals (they need the browser and the window's dialog;
// e2e/devmode_test.go does those in Chromium).
func TestDevelopersDocWalk(t *testing.T) {
	dist, err := filepath.Abs(filepath.Join("..", "frontend", "dist"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(msg string) {
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatalf("%s (POPPYDESK_REQUIRE_E2E=1)", msg)
		}
		t.Skip(msg + "; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
	}
	if _, err := os.Stat(filepath.Join(dist, "index.html")); err != nil {
		missing("the frontend is not built (no frontend/dist/index.html): run `npm run build` in frontend/")
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		missing("no D-Bus session for the keyring: run inside scripts/with-keyring.sh")
	}
	raw, err := os.ReadFile("../docs/DEVELOPERS.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := walkedCommands(t, string(raw))
	start := time.Now()
	bin := buildPoppydesk(t)
	t.Logf("go build: %s", time.Since(start).Round(time.Millisecond))

	// The clean machine: an empty home, every XDG folder inside it, the keyring session of
	// with-keyring.sh, and nothing else of the caller's environment but PATH.
	home := t.TempDir()
	xdg := map[string]string{
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	for k, v := range xdg {
		env = append(env, k+"="+v)
	}
	for _, k := range []string{"DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	paths, err := app.ResolvePaths(app.Env{GOOS: runtime.GOOS, Home: home, Getenv: func(k string) string { return xdg[k] }})
	if err != nil {
		t.Fatal(err)
	}
	devCA := app.DevCAPath(paths)
	if _, err := os.Stat(devCA); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the clean machine already has %s (%v)", devCA, err)
	}

	var co *walkCompany
	var win *walkWindow
	clientID := ""                       // the developer-mode client_id Settings showed at the first start
	saved := []string{"", ""}            // the Company and CA file entered in Settings → Developer mode
	winDev := false                      // the running window is in developer mode
	byState := map[string]*walkCompany{} // the Company last started with each --state
	ran := map[string]int{}
	for i, st := range steps {
		args := make([]string, len(st.args))
		for j, w := range st.args {
			if strings.HasPrefix(w, "~/") {
				w = filepath.Join(home, w[2:])
			}
			if strings.Contains(w, "DOMAIN") || strings.Contains(w, "CA_CERT") {
				if co == nil {
					t.Fatalf("step %d (`%s`) names DOMAIN or CA_CERT before any `company serve`", i+1, st.line)
				}
				w = strings.NewReplacer("DOMAIN", co.Domain, "CA_CERT", co.CACert).Replace(w)
			}
			args[j] = w
		}
		stepStart := time.Now()
		switch {
		case args[0] == "window":
			if win != nil {
				win.proc.stop(t) // quit before starting it again
			}
			p, line := startWalkProcess(t, bin, home, env, append(args, "--e2e-listen", "127.0.0.1:0", "--e2e-dist", dist))
			win = openWalkWindow(t, p, line)
			if _, err := os.Stat(devCA); err != nil {
				t.Fatalf("step %d (`%s`): the developer CA the document names is not there: %v; stderr:\n%s", i+1, st.line, err, p.stderr.String())
			}
			var view struct {
				Developer struct {
					Active        bool     `json:"active"`
					Companies     []string `json:"companies"`
					CAFile        string   `json:"ca_file"`
					ClientID      string   `json:"client_id"`
					AgentCAFile   string   `json:"agent_ca_file"`
					RestartNeeded bool     `json:"restart_needed"`
				} `json:"developer"`
			}
			if e := win.call(t, "fronts.Settings.View", &view); e != "" {
				t.Fatalf("step %d (`%s`): Settings: %s", i+1, st.line, e)
			}
			if strings.Contains(st.comment, "enter DOMAIN and CA_CERT in Settings") {
				// Settings → Developer mode, as the developer fills it in: saved for the next start.
				if e := win.call(t, "fronts.Settings.SetDeveloper", &view, []string{co.Domain}, co.CACert); e != "" || !view.Developer.RestartNeeded {
					t.Errorf("step %d (`%s`): Settings → Developer mode with %s and %s: %q, restart needed %t", i+1, st.line, co.Domain, co.CACert, e, view.Developer.RestartNeeded)
				}
				saved = []string{co.Domain, co.CACert}
			} else {
				d := view.Developer
				want := []string{flagValue(args, "--dev-company"), flagValue(args, "--dev-ca")}
				if want[0] == "" {
					want = saved // without --dev-company the saved settings apply
				}
				if !d.Active || len(d.Companies) != 1 || d.Companies[0] != want[0] || d.CAFile != want[1] || d.AgentCAFile != devCA || d.ClientID == "" {
					t.Errorf("step %d (`%s`): Settings → Developer mode shows %+v, want %q with CA %q and the developer CA %s", i+1, st.line, d, want[0], want[1], devCA)
				}
				if clientID != "" && d.ClientID != clientID {
					t.Errorf("step %d (`%s`): the client_id is %s, at the start before %s; the document says it stays the same", i+1, st.line, d.ClientID, clientID)
				}
				clientID = d.ClientID
			}
			winDev = view.Developer.Active
			if co != nil && winDev {
				discoverInWindow(t, win, co, i, st)
			}
			if strings.Contains(st.comment, "quit it") {
				win.proc.stop(t)
			}
		case len(args) > 1 && args[0] == "company" && args[1] == "serve":
			if co != nil {
				co.proc.stop(t) // Ctrl-C before starting it again
			}
			p, line := startWalkProcess(t, bin, home, env, args)
			co = &walkCompany{proc: p}
			if err := json.Unmarshal([]byte(line), co); err != nil || co.Domain == "" || co.CACert == "" {
				t.Fatalf("step %d (`%s`) printed %q (%v); stderr:\n%s", i+1, st.line, line, err, p.stderr.String())
			}
			if co.caPEM, err = os.ReadFile(co.CACert); err != nil {
				t.Errorf("step %d (`%s`): its ca_cert %s: %v", i+1, st.line, co.CACert, err)
			}
			if co.AgentCA != devCA {
				t.Errorf("step %d (`%s`): the Company trusts %q, want the developer CA %s by itself", i+1, st.line, co.AgentCA, devCA)
			}
			state := flagValue(args, "--state")
			previous := byState[state]
			if state != "" {
				byState[state] = co
			}
			// The running window's Discover fetches the documents anew: it finds the restarted
			// Company, and sees at once a fault the Company now has, although the documents it
			// fetched before were still fresh by their HTTP caching.
			if win != nil && win.proc.cmd.ProcessState == nil && winDev {
				if len(co.Faults) == 0 {
					discoverInWindow(t, win, co, i, st) // the running Poppydesk, not restarted
				} else if e := win.call(t, "fronts.Companies.Discover", nil, co.Domain); e == "" {
					t.Errorf("step %d (`%s`): Companies → Discover in the running window still verifies %s, started with %v", i+1, st.line, co.Domain, co.Faults)
				}
			}
			if previous != nil && (co.Domain != previous.Domain || co.CACert != previous.CACert || !bytes.Equal(co.caPEM, previous.caPEM)) {
				t.Errorf("step %d (`%s`): restarted with the same --state, the Company is %s with %s (same CA: %t), before %s with %s",
					i+1, st.line, co.Domain, co.CACert, bytes.Equal(co.caPEM, previous.caPEM), previous.Domain, previous.CACert)
			}
		case args[0] == "discover":
			stdout, stderr, code := runWalk(t, bin, home, env, args)
			var out struct {
				Organization struct {
					Domain string `json:"domain"`
				} `json:"organization"`
			}
			if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out.Organization.Domain != co.Domain {
				t.Errorf("step %d (`%s`): exit %d, organization.domain %q, want exit 0 and %s\nstdout:\n%s\nstderr:\n%s",
					i+1, st.line, code, out.Organization.Domain, co.Domain, stdout, stderr)
			}
		case args[0] == "check":
			stdout, stderr, code := runWalk(t, bin, home, env, args)
			// "exit 1: FAIL MUST, WORDS" in the line's comment: exit 1 and a MUST failure saying WORDS.
			_, rule, failing := strings.Cut(st.comment, "exit 1: FAIL MUST, ")
			rule = strings.TrimSpace(rule)
			switch {
			case !failing && (code != 0 || strings.Contains(stdout, "FAIL") || !strings.Contains(stdout, "PASS")):
				t.Errorf("step %d (`%s`): exit %d, want 0 with PASS and no FAIL\nstdout:\n%s\nstderr:\n%s", i+1, st.line, code, stdout, stderr)
			case failing && (code != 1 || !regexp.MustCompile(`(?m)^FAIL MUST .*`+regexp.QuoteMeta(rule)).MatchString(stdout)):
				t.Errorf("step %d (`%s`): exit %d, want 1 with a MUST failure saying %q\nstdout:\n%s\nstderr:\n%s", i+1, st.line, code, rule, stdout, stderr)
			}
			t.Logf("step %d: check's summary: %s; its failures: %q", i+1, lastLine(stdout), regexp.MustCompile(`(?m)^.*FAIL.*$`).FindAllString(stdout, -1))
			// One client_id to register: check acts as the window's, running or not.
			if m := regexp.MustCompile(`client_id is (\S+)`).FindStringSubmatch(stderr); m == nil || m[1] != clientID {
				t.Errorf("step %d (`%s`): check acts as the client_id %q, want the window's %s; stderr:\n%s", i+1, st.line, m, clientID, stderr)
			}
			if !strings.Contains(stderr, "must trust "+devCA) {
				t.Errorf("step %d (`%s`): check does not name the developer CA %s the Company must trust; stderr:\n%s", i+1, st.line, devCA, stderr)
			}
			if name := flagValue(args, "--har"); name != "" {
				har := filepath.Join(home, name)
				var h struct {
					Log struct {
						Entries []json.RawMessage `json:"entries"`
					} `json:"log"`
				}
				b, err := os.ReadFile(har)
				if err != nil || json.Unmarshal(b, &h) != nil || len(h.Log.Entries) < 10 {
					t.Errorf("step %d (`%s`): the HAR archive %s holds %d entries (%v)", i+1, st.line, har, len(h.Log.Entries), err)
				}
			}
		default:
			t.Fatalf("step %d of the walked block, `%s`, is a subcommand this test does not know how to check: teach TestDevelopersDocWalk its result", i+1, st.line)
		}
		ran[args[0]]++
		t.Logf("step %d `%s`: %s", i+1, st.line, time.Since(stepStart).Round(time.Millisecond))
	}
	for _, sub := range []string{"window", "company", "discover", "check"} {
		if ran[sub] == 0 {
			t.Errorf("the walked block of docs/DEVELOPERS.md has no `poppydesk %s` step", sub)
		}
	}
	if co != nil {
		co.proc.stop(t)
	}
	if win != nil {
		win.proc.stop(t)
	}
}

// walkWindow is a running `poppydesk window --e2e-listen`: its process and a client of its
// browser-testable bridge, holding the cookie the one-time URL was traded for.
type walkWindow struct {
	proc   *walkProcess
	c      *http.Client
	origin string
}

// openWalkWindow opens the URL the window printed ("Open URL"), as the browser would.
func openWalkWindow(t *testing.T, p *walkProcess, line string) *walkWindow {
	t.Helper()
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "Open ")
	parsed, err := url.Parse(u)
	if !ok || err != nil {
		t.Fatalf("the window printed %q, not Open URL; stderr:\n%s", line, p.stderr.String())
	}
	jar, _ := cookiejar.New(nil)
	w := &walkWindow{proc: p, c: &http.Client{Jar: jar, Timeout: 90 * time.Second}, origin: parsed.Scheme + "://" + parsed.Host}
	res, err := w.c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("opening the window's URL: HTTP %d", res.StatusCode)
	}
	return w
}

// call calls a window service method through the bridge, as the frontend does, decoding the
// result into out; it returns the error the window would show ("" for none).
func (w *walkWindow) call(t *testing.T, name string, out any, args ...any) string {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	body, _ := json.Marshal(map[string]any{"name": name, "args": args})
	req, _ := http.NewRequest(http.MethodPost, w.origin+"/bridge/call", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := w.c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer res.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatalf("%s: HTTP %d: %v", name, res.StatusCode, err)
	}
	if r.Error == "" && out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s result %s: %v", name, r.Result, err)
		}
	}
	return r.Error
}

// discoverInWindow is Companies → Discover in the running window for the running Company: it
// must find it by its domain.
func discoverInWindow(t *testing.T, w *walkWindow, co *walkCompany, i int, st walkStep) {
	t.Helper()
	var entry map[string]any
	if e := w.call(t, "fronts.Companies.Discover", &entry, co.Domain); e != "" {
		t.Errorf("step %d (`%s`): Companies → Discover %s in the running window: %s", i+1, st.line, co.Domain, e)
		return
	}
	if !strings.Contains(fmt.Sprint(entry), co.Domain) {
		t.Errorf("step %d (`%s`): Companies → Discover %s in the running window gave %v", i+1, st.line, co.Domain, entry)
	}
}

// runWalk runs bin with args to its end (up to 3 min) and returns its output and exit status.
func runWalk(t *testing.T, bin, dir string, env, args []string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit) && ctx.Err() == nil:
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("poppydesk %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	return "", "", 0
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// flagValue is the value of flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	for j, a := range args {
		if a == flag && j+1 < len(args) {
			return args[j+1]
		}
	}
	return ""
}
