//go:build realwindow

package realwindow

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
)

// TestFirstHourThroughTheAssistant is the first hour of a person with no domain and no operator
// of their own, chained as they live it, on a desktop with a window manager: they launch
// Poppydesk (a release build whose default operator is a `poppydesk operator serve` this test
// starts), press Enter on "Get started", run `poppydesk mcp setup claude-code`, and their
// assistant, started from the entry that command wrote with the environment the official MCP
// SDKs give a stdio server (HOME, LOGNAME, PATH, SHELL, TERM, USER and nothing else), lists
// Poppydesk's tools, asks a Company (`poppydesk company serve`, which registers the operator's
// identity) for an exchange and is told the person must sign in; the person reviews the sign-in
// request in the window and signs in in their browser; the assistant asks again, the approval dialog opens,
// the person clicks Approve, and the assistant's wait ends with the exchange performed at the
// Company. Every step is a real process: the window (WebKitGTK) driven with X input events and
// read through AT-SPI, the Secret Service (gnome-keyring on the desktop's bus), the relay
// (poppydesk-mcp) the client entry starts, the operator's blind signatures. The person's browser
// is the one part played by the test: the desktop's opener (xdg-open) hands the URL to the test,
// which answers the Company's consent page as a person would (poppytest.AnswerConsent).
func TestFirstHourThroughTheAssistant(t *testing.T) {
	d := startDesktop(t, "1280x800")
	top := t
	d.startKeyring()
	dir := d.dir
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}

	// The operator's certificate for operator.localhost, from a CA of this test.
	opTLS := poppytest.NewServerTLS(t, dir, "operator.localhost")
	opCA, certFile, keyFile := opTLS.CAFile, opTLS.CertFile, opTLS.KeyFile
	port := freePort(t)
	opURL := fmt.Sprintf("https://operator.localhost:%d", port)

	// The release build naming that operator as its default, and its MCP relay beside it, as the
	// package installs them.
	bin := filepath.Join(dir, "bin", "poppydesk")
	started := time.Now()
	build := exec.Command("go", "build", "-tags", "desktop,production,webkit2_41", "-ldflags", "-X main.defaultOperator="+opURL, "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the release binary failed: %v\n%s", err, out)
	}
	relay := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "poppydesk-mcp"), "./cmd/poppydesk-mcp")
	relay.Dir, relay.Env = build.Dir, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := relay.CombinedOutput(); err != nil {
		t.Fatalf("building poppydesk-mcp failed: %v\n%s", err, out)
	}
	t.Logf("release binary and relay built in %v", time.Since(started).Round(time.Millisecond))

	// The operator, with open enrollment, and a Company that registers identities it publishes.
	keyPEM := filepath.Join(dir, "operator-key.pem")
	if out, err := exec.Command(bin, "operator", "keygen", "--out", keyPEM, "--bits", "2048").CombinedOutput(); err != nil {
		t.Fatalf("operator keygen failed: %v\n%s", err, out)
	}
	var opInfo struct {
		ClientID string `json:"client_id"`
	}
	serve(t, d, &opInfo, bin, "operator", "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--public-url", opURL, "--key", keyPEM,
		"--db", "sqlite:"+filepath.Join(dir, "operator.sqlite"), "--enrollment", "open", "--tls-cert", certFile, "--tls-key", keyFile,
		"--client-name", "Poppydesk Cloud (test)")
	var co struct {
		Domain string `json:"domain"`
		CACert string `json:"ca_cert"`
	}
	serve(t, d, &co, bin, "company", "serve", "--agent-host", "operator.localhost", "--agent-ca", opCA)
	coCA, err := os.ReadFile(co.CACert)
	if err != nil {
		t.Fatal(err)
	}
	// Developer mode reaches both on loopback and trusts the test's two CAs for their hosts only.
	bothCAs := filepath.Join(dir, "dev-ca.pem")
	if err := os.WriteFile(bothCAs, append(append([]byte{}, opTLS.CA.PEM...), coCA...), 0o600); err != nil {
		t.Fatal(err)
	}

	// The person's browser: the desktop's opener hands each URL to the test.
	opened := filepath.Join(dir, "opened")
	openerDir := filepath.Join(dir, "opener")
	if err := os.MkdirAll(openerDir, 0o700); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$1\" >> %q\n", opened)
	if err := os.WriteFile(filepath.Join(openerDir, "xdg-open"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + openerDir + ":" + os.Getenv("PATH")}

	p := d.launchWindow(bin, env, "--debug", "--dev-operator", fmt.Sprintf("operator.localhost:%d", port), "--dev-company", co.Domain, "--dev-ca", bothCAs)
	var readyToAct time.Time
	d.step(t, "Get started enrolls with the default operator and the window is ready to act", func(t *testing.T) {
		p.focusWindow()
		t.Logf("screenshot: %s", d.screenshot("firsthour-first-run.png"))
		if f := focused(d.a11y.document(t)); f == nil || f.Name != "Get started" {
			t.Errorf("the focus on the first-run screen is on %v, want Get started", f)
		}
		p.key("Return") // Get started has the focus on the first-run screen
		d.waitFor("the window to be ready to act", 60*time.Second, func() bool {
			if !p.running() {
				t.Fatalf("Poppydesk exited (see %s)", filepath.Join(dir, "app.stderr"))
			}
			return len(logLines(p.log, "window ready to act")) > 0
		})
		readyToAct = time.Now()
		line := logLines(p.log, "window ready to act")[0]
		if fmt.Sprint(line) == "" || !strings.Contains(fmt.Sprint(line), opInfo.ClientID) {
			t.Fatalf("ready to act as %v, want the operator's %s", line, opInfo.ClientID)
		}
		t.Logf("launch → ready to act: %v", readyToAct.Sub(p.launched).Round(time.Millisecond))
		t.Logf("screenshot: %s", d.screenshot("firsthour-ready.png"))
	})

	var model *mcp.ClientSession
	d.step(t, "mcp setup writes an entry the assistant starts with a scrubbed environment, and it lists the tools", func(t *testing.T) {
		setup := exec.Command(bin, "mcp", "setup", "claude-code")
		setup.Stdin = strings.NewReader("y\n") // the person's answer to "Write this to …?"
		setup.Env = append(sdkDefaultEnv(home), "PATH="+os.Getenv("PATH"))
		if out, err := setup.CombinedOutput(); err != nil {
			t.Fatalf("poppydesk mcp setup claude-code failed: %v\n%s", err, out)
		}
		raw, err := os.ReadFile(filepath.Join(home, ".claude.json"))
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(raw, &file); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		entry, ok := file.MCPServers["poppydesk"]
		if !ok {
			t.Fatalf("no poppydesk entry in %s", raw)
		}
		// What the SDKs' stdio transport does: the entry's command and args, the default
		// environment and the entry's own variables (none set by hand).
		cmd := exec.Command(entry.Command, entry.Args...)
		cmd.Env = sdkDefaultEnv(home)
		for k, v := range entry.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = logFile(t, dir, "relay.stderr")
		c := mcp.NewClient(&mcp.Implementation{Name: "assistant", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		model, err = c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("the assistant could not start Poppydesk's entry %s %v: %v", entry.Command, entry.Args, err)
		}
		top.Cleanup(func() { model.Close() })
		tools, err := model.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		for _, want := range []string{modelapi.ToolDiscoverCompany, modelapi.ToolCallAPIOperation, modelapi.ToolRequestSignIn, modelapi.ToolWaitForApproval} {
			if !slices.Contains(names, want) {
				t.Fatalf("the assistant's list of Poppydesk's tools lacks %s: %v", want, names)
			}
		}
		t.Logf("the assistant lists %d tools", len(names))
	})
	if model == nil {
		t.FailNow()
	}
	call := func(t *testing.T, name string, args map[string]any) (string, map[string]any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		res, err := model.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s failed: %v", name, err)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		st, _ := sc["status"].(string)
		return st, sc
	}
	exchange := map[string]any{"company": co.Domain, "operation_id": "exchangeItem", "path_params": map[string]any{"id": "ord_7Hk2"},
		"body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}}

	if t.Failed() {
		t.FailNow()
	}
	signedIn := d.step(t, "the assistant's exchange asks for a sign-in and the person signs in from the window", func(t *testing.T) {
		if st, sc := call(t, modelapi.ToolDiscoverCompany, map[string]any{"domain": co.Domain}); st != modelapi.StatusOK {
			t.Fatalf("discover_company answered %q: %v", st, sc["message"])
		}
		// Signed out, the exchange puts a sign-in request on the window's Sign-in screen itself.
		if st, sc := call(t, modelapi.ToolCallAPIOperation, exchange); st != modelapi.StatusWaitingForSignIn {
			t.Fatalf("the exchange before any sign-in answered %q: %v", st, sc["message"])
		}
		p.focusWindow()
		p.clickNamed("Sign-in in the navigation", func(n *node) bool { return n.Role == "link" && strings.HasPrefix(n.Name, "Sign-in") })
		p.clickNamed("Review…", func(n *node) bool { return n.Role == "push button" && n.Name == "Review…" })
		p.clickNamed("Sign in in your browser", func(n *node) bool { return n.Role == "push button" && n.Name == "Sign in in your browser" })
		var authURL string
		d.waitFor("the browser to be opened", 30*time.Second, func() bool {
			b, _ := os.ReadFile(opened)
			authURL, _, _ = strings.Cut(string(b), "\n")
			return authURL != ""
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		page, err := poppytest.AnswerConsent(ctx, browserTrusting(t, coCA), authURL, poppytest.Consent{Decision: "approve", Account: "user@shop.example"})
		if err != nil {
			t.Fatalf("the person's browser: %v", err)
		}
		t.Logf("the browser shows: %.120s", page)
		d.waitFor("the sign-in to finish in the window", 30*time.Second, func() bool { return len(logLines(p.log, "signed in")) > 0 })
		t.Logf("screenshot: %s", d.screenshot("firsthour-signed-in.png"))
	})

	if !signedIn {
		t.FailNow()
	}
	d.step(t, "the assistant's exchange needs an approval, the person approves it in the window, and the wait ends performed", func(t *testing.T) {
		st, sc := call(t, modelapi.ToolCallAPIOperation, exchange)
		if st != modelapi.StatusWaitingForUser {
			t.Fatalf("the exchange after the sign-in answered %q: %v", st, sc["message"])
		}
		id, _ := sc["approval_id"].(string)
		done := make(chan [2]string, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			res, err := model.CallTool(ctx, &mcp.CallToolParams{Name: modelapi.ToolWaitForApproval, Arguments: map[string]any{"approval_id": id, "timeout_seconds": 110}})
			if err != nil {
				done <- [2]string{"", err.Error()}
				return
			}
			sc, _ := res.StructuredContent.(map[string]any)
			st, _ := sc["status"].(string)
			msg, _ := sc["message"].(string)
			done <- [2]string{st, msg}
		}()
		p.waitShown(id, 0)
		p.focusWindow()
		var approve *node
		d.waitFor("Approve to be available", 20*time.Second, func() bool {
			dlg := dialogIn(d.a11y.document(t))
			if dlg == nil {
				return false
			}
			approve = button(dlg, "Approve")
			return approve != nil && approve.has(stateEnabled)
		})
		t.Logf("screenshot: %s", d.screenshot("firsthour-approval.png"))
		x, y := centre(t, approve)
		p.clickAt(x, y)
		select {
		case r := <-done:
			if r[0] != modelapi.StatusPerformed {
				t.Fatalf("the assistant's wait ended %q: %s", r[0], r[1])
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the assistant's wait did not end within 60 s of the click on Approve")
		}
		t.Logf("launch → ready to act %v; the whole first hour, machine time: %v", readyToAct.Sub(p.launched).Round(time.Millisecond),
			time.Since(p.launched).Round(time.Millisecond))
	})
}

// sdkDefaultEnv is the environment the official MCP SDKs (TypeScript getDefaultEnvironment,
// Python get_default_environment) give a stdio server on Linux: HOME, LOGNAME, PATH, SHELL,
// TERM and USER from the client's own, here with the person's home folder.
func sdkDefaultEnv(home string) []string {
	env := []string{"HOME=" + home}
	for _, k := range []string{"LOGNAME", "PATH", "SHELL", "TERM", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serve starts bin with args (operator serve, company serve), which print one JSON line when
// they listen, decodes that line into info and stops the process when the test ends.
func serve(t *testing.T, d *desktop, info any, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = d.environ()
	cmd.Stderr = logFile(t, d.dir, args[0]+".stderr")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting poppydesk %s failed: %v", strings.Join(args[:2], " "), err)
	}
	stop(t, cmd)
	line, err := readLine(out.(*os.File), 30*time.Second)
	if err != nil {
		t.Fatalf("poppydesk %s printed nothing: %v (see %s.stderr)", strings.Join(args[:2], " "), err, args[0])
	}
	if err := json.Unmarshal([]byte(line), info); err != nil {
		t.Fatalf("poppydesk %s printed %q: %v", strings.Join(args[:2], " "), line, err)
	}
}

// browserTrusting is the person's browser as an HTTP client: it trusts the Company's CA, sends
// *.localhost to loopback as browsers do, and shows redirects rather than following them.
func browserTrusting(t *testing.T, caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the Company's CA file holds no certificate")
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return dialer.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// startKeyring starts gnome-keyring's Secret Service on the desktop's session bus, unlocked with
// a password of this test, as a desktop session's login does.
func (d *desktop) startKeyring() {
	d.t.Helper()
	need(d.t, "gnome-keyring-daemon", "gnome-keyring")
	cmd := exec.Command("gnome-keyring-daemon", "--unlock", "--components=secrets")
	cmd.Env = d.environ()
	cmd.Stdin = strings.NewReader("realwindow-test")
	if out, err := cmd.CombinedOutput(); err != nil {
		d.t.Fatalf("gnome-keyring-daemon --unlock failed: %v\n%s", err, out)
	}
}

// launchWindow starts bin (the window, as the desktop's menu does, with args) with the desktop's
// environment and env, and waits until the window shows data from Go.
func (d *desktop) launchWindow(bin string, env []string, args ...string) *poppydesk {
	t := d.t
	t.Helper()
	p := &poppydesk{d: d, exited: make(chan struct{}), log: filepath.Join(d.dir, "state", "poppydesk", "poppydesk.log"), launched: time.Now()}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(d.environ(), env...)
	p.cmd.Stdout = logFile(t, d.dir, "app.stdout")
	p.cmd.Stderr = logFile(t, d.dir, "app.stderr")
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s failed: %v", bin, err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.quit() })
	d.waitFor("the window to show data from Go", 60*time.Second, func() bool {
		if !p.running() {
			t.Fatalf("Poppydesk exited before its window was ready (see %s)", filepath.Join(d.dir, "app.stderr"))
		}
		return len(logLines(p.log, "window frontend ready")) > 0
	})
	p.findWindow()
	return p
}

// clickNamed waits for the accessible object ok finds in the window's page and clicks its middle.
func (p *poppydesk) clickNamed(what string, ok func(*node) bool) {
	p.d.t.Helper()
	var n *node
	var doc *node
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		doc = p.d.a11y.document(p.d.t)
		n = doc.find(ok)
		if n != nil {
			// Below the fold, a person scrolls with the wheel over the page until it is in view.
			_, dy, _, dh, err := doc.extents()
			_, ny, _, nh, err2 := n.extents()
			if err == nil && err2 == nil && n.has(stateShowing) && ny+nh <= dy+dh && ny >= dy {
				break
			}
			dx, dcy := centre(p.d.t, doc)
			p.d.run("xdotool", "mousemove", "--sync", fmt.Sprint(dx), fmt.Sprint(dcy), "click", "--repeat", "3", "5")
			time.Sleep(200 * time.Millisecond)
		}
		if time.Now().After(end) {
			var seen []string
			for _, c := range doc.all(ok) {
				x, y, w, h, _ := c.extents()
				seen = append(seen, fmt.Sprintf("%s showing=%v at %d,%d %dx%d", c, c.has(stateShowing), x, y, w, h))
			}
			p.d.t.Fatalf("no %s in view in the window within 20 s (screenshot %s; matches: %v); the window reads:\n%s", what, p.d.screenshot("missing.png"), seen, doc.text())
		}
	}
	x, y := centre(p.d.t, n)
	p.clickAt(x, y)
	time.Sleep(300 * time.Millisecond)
}
