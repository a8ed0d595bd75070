package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// TestCheckInCI: `poppydesk check` runs as a Company's CI job runs it: a child process whose
// environment has only PATH and HOME (no DISPLAY, no WAYLAND_DISPLAY, no D-Bus session bus, no
// XDG_RUNTIME_DIR, so no keyring can be reached), against the reference Company trusting the
// developer CA under that HOME. It passes, writes valid JUnit and a HAR archive, and touches no
// keyring (it would fail without a session bus if it tried).
func TestCheckInCI(t *testing.T) {
	home := t.TempDir()
	paths, err := app.ResolvePaths(app.Env{GOOS: runtime.GOOS, Getenv: func(string) string { return "" }, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	agentCA, err := app.EnsureDevCA(paths, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	info := startCompanyCLI(t, "--agent-ca", agentCA)
	har := filepath.Join(home, "check.har")
	cmd := exec.Command(os.Args[0], "check", info.Domain, "--dev-company", info.Domain, "--dev-ca", info.CACert,
		"--probe-url", "https://"+info.Domain+"/api/products", "--allow-actions", "conversation,feedback",
		"--format", "junit", "--har", har)
	cmd.Env = []string{envCLIMain + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home}
	for _, kv := range cmd.Env {
		for _, gui := range []string{"DISPLAY=", "WAYLAND_DISPLAY=", "DBUS_SESSION_BUS_ADDRESS=", "XDG_RUNTIME_DIR="} {
			if strings.HasPrefix(kv, gui) {
				t.Fatalf("the CI environment carries %s", kv)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("check in CI: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	validateJUnit(t, stdout.String())
	if !strings.Contains(stdout.String(), `failures="0"`) || strings.Count(stdout.String(), "<testcase ") < 40 {
		t.Errorf("the JUnit report:\n%s", stdout.String())
	}
	if fi, err := os.Stat(har); err != nil || fi.Size() < 10000 {
		t.Errorf("the HAR archive: %v, %v", fi, err)
	}
	for _, bad := range []string{"keyring", "D-Bus", "dbus", "display"} {
		if strings.Contains(strings.ToLower(stderr.String()), strings.ToLower(bad)) {
			t.Errorf("check's stderr mentions %s:\n%s", bad, stderr.String())
		}
	}
	t.Logf("stderr:\n%s", stderr.String())
}
