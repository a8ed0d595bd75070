package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// TestGetStartedInTheReleaseWindow is the first hour's one click, as a person does it, in the
// real window: the release build (desktop,production,webkit2_41, what `wails build` compiles)
// built with a default operator (-X main.defaultOperator) that points at `poppydesk operator
// serve` (open enrollment, its proof of work, loopback TLS) started by this test; the window
// under Xvfb, on the session bus and Secret Service of scripts/with-keyring.sh. Enter on the
// first-run screen (the Get started button has the focus) enrolls, the window restarts in the
// same process and says Poppydesk is ready with the operator's name and logo. The enrollment is
// in the keyring, the operator recorded in the state database, and the process stops cleanly.
// It logs the time from the process start to "ready to act", step by step, and, with
// POPPYDESK_SHOTS=DIR, keeps a screenshot of each step.
func TestGetStartedInTheReleaseWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	need := func(what, pkg string) string {
		p, err := exec.LookPath(what)
		if err != nil {
			msg := fmt.Sprintf("%s is missing (Debian package %s)", what, pkg)
			if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
				t.Fatal(msg + " and POPPYDESK_REQUIRE_E2E=1")
			}
			t.Skip(msg + "; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
		}
		return p
	}
	xvfb, xdotool := need("Xvfb", "xvfb"), need("xdotool", "xdotool")
	prerequisites(t) // the built frontend, which the release binary embeds
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatal("no session bus: run through scripts/with-keyring.sh")
		}
		t.Skip("the window needs a session bus and a Secret Service: run through scripts/with-keyring.sh")
	}
	ctx := context.Background()
	dir := t.TempDir()

	// The operator's TLS certificate for operator.localhost, from a CA of this test.
	ca, err := refcompany.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Leaf(time.Now(), "operator.localhost")
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tls.pem"), filepath.Join(dir, "tls.key")
	var chain []byte
	for _, der := range leaf.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	for f, b := range map[string][]byte{caFile: ca.PEM, certFile: chain, keyFile: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opURL := fmt.Sprintf("https://operator.localhost:%d", port)

	// The release binary, naming that operator.
	bin := filepath.Join(dir, "poppydesk")
	start := time.Now()
	build := exec.Command("go", "build", "-tags", "desktop,production,webkit2_41", "-ldflags", "-X main.defaultOperator="+opURL, "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the release binary: %v\n%s", err, out)
	}
	t.Logf("release binary built in %v", time.Since(start).Round(time.Millisecond))

	keyPEM := filepath.Join(dir, "operator-key.pem")
	if out, err := exec.Command(bin, "operator", "keygen", "--out", keyPEM, "--bits", "2048").CombinedOutput(); err != nil {
		t.Fatalf("operator keygen: %v\n%s", err, out)
	}
	op := exec.Command(bin, "operator", "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--public-url", opURL, "--key", keyPEM,
		"--db", "sqlite:"+filepath.Join(dir, "operator.sqlite"), "--enrollment", "open", "--tls-cert", certFile, "--tls-key", keyFile,
		"--client-name", "Poppydesk Cloud (test)")
	op.Stderr = &lockedBuffer{}
	opOut, err := op.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcess(t, op, "operator serve") })
	line, err := bufio.NewReader(opOut).ReadString('\n')
	if err != nil {
		t.Fatalf("operator serve printed nothing: %v\n%s", err, op.Stderr)
	}
	var opInfo struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(line), &opInfo); err != nil || opInfo.ClientID != opURL+"/agent.json" {
		t.Fatalf("operator serve printed %q (%v)", line, err)
	}

	// A private X display.
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	xv := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	xv.ExtraFiles = []*os.File{wr}
	if err := xv.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	t.Cleanup(func() { stopProcess(t, xv, "Xvfb") })
	num, err := bufio.NewReader(rd).ReadString('\n')
	rd.Close()
	if err != nil {
		t.Fatalf("Xvfb gave no display: %v", err)
	}
	display := ":" + strings.TrimSpace(num)

	// The user's session: fresh folders, a keyring service of this test.
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	service := "poppydesk-test-" + hex.EncodeToString(buf)
	kr := vault.NewKeyring(vault.KeyringOptions{Service: service})
	t.Cleanup(func() { _ = kr.DeleteAll(context.Background()) })
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "DISPLAY="+display, "POPPYDESK_KEYRING_SERVICE="+service, "XDG_DATA_HOME="+home+"/data",
		"XDG_CONFIG_HOME="+home+"/config", "XDG_STATE_HOME="+home+"/state", "XDG_CACHE_HOME="+home+"/cache")
	logFile := filepath.Join(home, "state", "poppydesk", "poppydesk.log")
	shots := os.Getenv("POPPYDESK_SHOTS")
	shot := func(name string) {
		if shots == "" {
			return
		}
		time.Sleep(700 * time.Millisecond) // the log line comes before the paint
		cmd := exec.Command("import", "-display", display, "-window", "root", filepath.Join(shots, "firsthour-"+name+".png"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("screenshot %s: %v %s", name, err, out)
		}
	}

	// Launched as the menu does, plus developer mode for an operator under development, so that
	// this Poppydesk may reach the operator on loopback with the test's CA.
	win := exec.Command(bin, "--dev-operator", fmt.Sprintf("operator.localhost:%d", port), "--dev-ca", caFile)
	win.Env = env
	winErr := &lockedBuffer{}
	win.Stdout, win.Stderr = winErr, winErr
	t0 := time.Now()
	if err := win.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- win.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = win.Process.Kill()
			<-exited
		}
	})
	logs := &logWatch{path: logFile}
	wait := func(msg string, n int) time.Time {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if at, ok := logs.nth(msg, n); ok {
				return at
			}
			select {
			case err := <-exited:
				stopped = true
				t.Fatalf("Poppydesk exited (%v) before %q:\n%s\nlog:\n%s", err, msg, winErr, logs.text())
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatalf("no %q (#%d) in the log within 60 s:\n%s\nstderr:\n%s", msg, n, logs.text(), winErr)
		return time.Time{}
	}
	firstReady := wait("window frontend ready", 1)
	shot("1-first-run")
	xdo := func(args ...string) *exec.Cmd {
		cmd := exec.Command(xdotool, args...)
		cmd.Env = env
		return cmd
	}
	wid, err := xdo("search", "--sync", "--onlyvisible", "--name", "^Poppydesk$").Output()
	if err != nil || len(strings.Fields(string(wid))) == 0 {
		t.Fatalf("xdotool cannot find the window: %v", err)
	}
	click := time.Now()
	// Without a window manager the window may already have the focus, and focusing it again
	// can be refused (BadMatch): then the key goes to the focused window, as smoke.sh does.
	if out, err := xdo("windowactivate", "--sync", strings.Fields(string(wid))[0], "key", "Return").CombinedOutput(); err != nil {
		t.Logf("focusing the window: %v %s; pressing Enter in the focused window", err, out)
		if out, err := xdo("key", "Return").CombinedOutput(); err != nil {
			t.Fatalf("pressing Enter: %v %s", err, out)
		}
	}
	enrolled := wait("got started with the default operator", 1)
	restart := wait("restarting from the window", 1)
	secondReady := wait("window frontend ready", 2)
	readyToAct := wait("window ready to act", 1)
	shot("2-ready")
	if !strings.Contains(logs.line("window ready to act"), opInfo.ClientID) {
		t.Errorf("ready to act as %s, want the operator's %s", logs.line("window ready to act"), opInfo.ClientID)
	}
	ms := func(a, b time.Time) string { return fmt.Sprintf("%d ms", b.Sub(a).Milliseconds()) }
	t.Logf("menu launch → first-run screen shown: %s", ms(t0, firstReady))
	t.Logf("Enter on Get started → enrolled (operator's proof of work, enrollment, name and logo read): %s", ms(click, enrolled))
	t.Logf("enrolled → restart asked: %s; restart → window shown again: %s; → ready card with name and logo: %s",
		ms(enrolled, restart), ms(restart, secondReady), ms(secondReady, readyToAct))
	t.Logf("menu launch → ready to act (machine time, the click made at once): %s; click → ready to act: %s", ms(t0, readyToAct), ms(click, readyToAct))

	dev, err := store.NewSecrets(vault.NewKeyring(vault.KeyringOptions{Service: service})).LoadDevice(ctx)
	if err != nil || dev.Operator != opURL || !strings.HasPrefix(dev.DeviceID, "dev_") {
		t.Fatalf("the enrollment in the keyring: %+v, %v", dev, err)
	}
	_ = win.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("Poppydesk did not stop cleanly: %v\n%s", err, winErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Poppydesk did not stop within 30 s of SIGTERM")
	}
	st, err := vault.OpenState(ctx, filepath.Join(home, "data", "poppydesk", app.StateFile), vault.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v, err := st.GetSetting(ctx, app.SettingOperator); err != nil || v != opURL {
		t.Errorf("the recorded operator = %q, %v", v, err)
	}
}

// logWatch reads the app's JSON log lines.
type logWatch struct{ path string }

func (l *logWatch) text() string {
	b, _ := os.ReadFile(l.path)
	return string(b)
}

// nth is the time of the n-th line whose msg is msg.
func (l *logWatch) nth(msg string, n int) (time.Time, bool) {
	for _, line := range strings.Split(l.text(), "\n") {
		var e struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == msg {
			if n--; n == 0 {
				return e.Time, true
			}
		}
	}
	return time.Time{}, false
}

// line is the first line whose msg is msg.
func (l *logWatch) line(msg string) string {
	for _, line := range strings.Split(l.text(), "\n") {
		if strings.Contains(line, `"msg":"`+msg+`"`) {
			return line
		}
	}
	return ""
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// stopProcess ends a process this test started: SIGTERM, then SIGKILL after 10 s.
func stopProcess(t *testing.T, cmd *exec.Cmd, name string) {
	if cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Logf("%s did not stop within 10 s of SIGTERM", name)
	}
}
