//go:build unix

package cli

// MCP clients as users run them, against Poppydesk as a user has it: the poppydesk program (this
// module's main package, built as `go build` builds it, so without the window) with the
// poppydesk-mcp program beside it, and the app running as a desktop session starts it, with
// XDG_RUNTIME_DIR, the XDG folders and a session bus address in its environment (its demo, so
// that the reference Company is there to call). Each client starts the server with the
// environment it gives servers, which is not the test's: the official TypeScript SDK client with
// its default environment (HOME, LOGNAME, PATH, SHELL, TERM and USER only), the MCP Inspector CLI
// without flags, and Claude Code (npm @anthropic-ai/claude-code) reading the ~/.claude.json that
// `poppydesk mcp setup claude-code` wrote. The app started by `poppydesk mcp` itself is tested
// with the desktop build in scripts/package-test.sh, where a real window can open.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// installation is Poppydesk built into a folder: poppydesk and poppydesk-mcp beside it.
type installation struct {
	poppydesk, relay string
}

func install(t *testing.T) installation {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := t.TempDir()
	in := installation{poppydesk: filepath.Join(bin, "poppydesk"), relay: filepath.Join(bin, "poppydesk-mcp")}
	for _, b := range []struct{ out, pkg string }{{in.poppydesk, "."}, {in.relay, "./cmd/poppydesk-mcp"}} {
		cmd := exec.Command(goTool, "build", "-o", b.out, b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s failed: %v\n%s", b.pkg, err, out)
		}
	}
	return in
}

// session is a desktop session's environment for a user whose home is home: what a program
// started from the desktop's menu, or a terminal in it, has.
func session(home string) []string {
	return []string{"HOME=" + home, "USER=" + os.Getenv("USER"), "LOGNAME=" + os.Getenv("USER"), "PATH=" + os.Getenv("PATH"),
		"SHELL=/bin/sh", "TERM=xterm", "LANG=C.UTF-8", "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "DBUS_SESSION_BUS_ADDRESS=disabled:"}
}

// demoApp is `poppydesk demo` running from an installation in a desktop session.
type demoApp struct {
	cmd    *exec.Cmd
	domain string // the reference Company's
}

// startDemo starts the app as the desktop does (the demo, its window served to a browser
// instead of GTK) and waits until its model interface answers.
func startDemo(t *testing.T, in installation, home string) *demoApp {
	t.Helper()
	dist := filepath.Join(home, "dist")
	os.MkdirAll(dist, 0o755)
	os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html><head></head><body>x</body></html>"), 0o644)
	os.MkdirAll(filepath.Join(home, "run"), 0o700)
	logFile := filepath.Join(home, "state", "poppydesk", "poppydesk.log")
	var logStart int64 // this run's lines follow those of a run before
	if fi, err := os.Stat(logFile); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(in.poppydesk, "demo", "--e2e-listen", "127.0.0.1:0", "--e2e-dist", dist)
	cmd.Env = session(home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &demoApp{cmd: cmd}
	t.Cleanup(a.stop)
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-first:
		if !strings.HasPrefix(l, "Open http://127.0.0.1:") {
			t.Fatalf("the demo printed %q", l)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the demo did not start within 90 s")
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log = log[min(int(logStart), len(log)):]
	m := regexp.MustCompile(`https://auth\.(shop\.localhost:[0-9]+)`).FindSubmatch(log)
	if m == nil {
		t.Fatalf("the demo's log does not name its reference Company:\n%s", log)
	}
	a.domain = string(m[1])
	return a
}

// stop ends the app as a crash would (SIGKILL) and waits for it.
func (a *demoApp) stop() {
	if a.cmd.ProcessState == nil {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	}
}

// TestMCPClientsAsUsersRunThem: each client, started as its users start it, lists Poppydesk's
// tools and calls one at the reference Company through the app a desktop session started; the
// TypeScript SDK client then sees the app end during a call (an error in words, at once) and
// carries on in the same session once the app runs again.
func TestMCPClientsAsUsersRunThem(t *testing.T) {
	m := needMCPTools(t)
	in := install(t)
	home := t.TempDir()
	app := startDemo(t, in, home)
	discover := map[string]any{"domain": app.domain}

	t.Run("TypeScript SDK, default environment, poppydesk mcp", func(t *testing.T) {
		// `poppydesk mcp`: the entry `poppydesk mcp setup` wrote before poppydesk-mcp existed,
		// and what the documentation has long said.
		c := m.startTSClientIn(t, session(home), "--default-env", in.poppydesk, "mcp")
		checkTSClient(t, c, discover)
	})
	t.Run("TypeScript SDK, default environment, poppydesk-mcp", func(t *testing.T) {
		c := m.startTSClientIn(t, session(home), "--default-env", in.relay)
		checkTSClient(t, c, discover)
	})
	t.Run("Inspector CLI", func(t *testing.T) {
		inspect := func(args ...string) map[string]any {
			t.Helper()
			argv := append(append([]string{m.inspector, "--format", "json"}, args...), "--", in.relay)
			cmd := exec.Command(m.node, argv...)
			cmd.Env = session(home)
			out, err := cmd.Output()
			var res map[string]any
			if jerr := jsonUnmarshal(out, &res); err != nil || jerr != nil {
				t.Fatalf("the Inspector CLI: %v %v: %s", err, jerr, out)
			}
			return res
		}
		tools, _ := inspect("--method", "tools/list")["result"].(map[string]any)["tools"].([]any)
		if len(tools) < 21 {
			t.Fatalf("the Inspector lists %d tools", len(tools))
		}
		res, _ := inspect("--method", "tools/call", "--tool-name", modelapi.ToolDiscoverCompany, "--tool-arg", "domain="+app.domain)["result"].(map[string]any)
		if status(res) != "ok" {
			t.Fatalf("discover_company through the Inspector: %v", res)
		}
		t.Logf("Inspector CLI: %d tools; discover_company %s", len(tools), status(res))
	})
	t.Run("Claude Code", func(t *testing.T) {
		claude := filepath.Join(m.dir, "node_modules", ".bin", "claude")
		if _, err := os.Stat(claude); err != nil {
			t.Fatalf("Claude Code is not installed (%v): run scripts/bootstrap.sh", err)
		}
		setup := exec.Command(in.poppydesk, "mcp", "setup", "claude-code", "--yes")
		setup.Env = session(home)
		if out, err := setup.CombinedOutput(); err != nil {
			t.Fatalf("poppydesk mcp setup claude-code: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
		if !bytes.Contains(b, []byte(`"command": "`+in.relay+`"`)) {
			t.Fatalf("~/.claude.json does not start poppydesk-mcp:\n%s", b)
		}
		list := exec.Command(claude, "mcp", "list")
		list.Env = session(home)
		out, err := list.CombinedOutput()
		t.Logf("claude mcp list:\n%s", out)
		if err != nil || !regexp.MustCompile(`(?m)^poppydesk: `+regexp.QuoteMeta(in.relay)+` .*Connected`).Match(out) {
			t.Fatalf("claude mcp list (%v) does not show poppydesk connected", err)
		}
	})
	t.Run("the app ends during a call and comes back", func(t *testing.T) {
		c := m.startTSClientIn(t, session(home), "--default-env", in.relay)
		res := c.call(modelapi.ToolCallAPIOperation, map[string]any{"company": app.domain, "operation_id": "exchangeItem",
			"path_params": map[string]any{"id": "ord_7Hk2"}, "body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}})
		id, _ := sc(res)["approval_id"].(string)
		if status(res) != "waiting_for_user" || id == "" {
			t.Fatalf("the exchange did not wait for the user: %v", res)
		}
		c.send(map[string]any{"op": "call", "tool": modelapi.ToolWaitForApproval, "args": map[string]any{"approval_id": id, "timeout_seconds": 300}})
		time.Sleep(time.Second)
		start := time.Now()
		app.stop()
		a := c.next()
		msg, _ := a["error"].(string)
		if !strings.Contains(msg, "Poppydesk stopped while it handled this request") || time.Since(start) > 10*time.Second {
			t.Fatalf("the wait when the app ended (after %s): %v", time.Since(start), a)
		}
		t.Logf("the client saw, %s after the app ended: %s", time.Since(start).Round(time.Millisecond), msg)
		again := startDemo(t, in, home)
		res = c.call(modelapi.ToolDiscoverCompany, map[string]any{"domain": again.domain})
		if status(res) != "ok" {
			t.Fatalf("the call after the app came back: %v", res)
		}
	})
}

// startTSClientIn starts the TypeScript SDK client (e2e/mcp/client.mjs) with the environment
// env, and fails unless it connected.
func (m mcpTools) startTSClientIn(t *testing.T, env []string, args ...string) *tsClient {
	t.Helper()
	c, hello := m.startTSClientEnv(t, env, args...)
	if hello["connected"] != true {
		t.Fatalf("the TypeScript SDK client did not connect: %v; its stderr: %s", hello, c.stderr)
	}
	return c
}

// checkTSClient lists the tools and discovers the reference Company.
func checkTSClient(t *testing.T, c *tsClient, discover map[string]any) {
	t.Helper()
	c.send(map[string]any{"op": "list"})
	tools, _ := c.next()["tools"].([]any)
	if len(tools) < 21 {
		t.Fatalf("%d tools listed", len(tools))
	}
	if res := c.call(modelapi.ToolDiscoverCompany, discover); status(res) != "ok" {
		t.Fatalf("discover_company: %v", res)
	}
	t.Logf("%d tools; discover_company ok", len(tools))
}

func jsonUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(bytes.TrimSpace(b), v); err != nil {
		return fmt.Errorf("%w in %q", err, b)
	}
	return nil
}
