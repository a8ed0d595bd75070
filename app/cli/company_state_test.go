package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// serveCompany runs `poppydesk company serve args…` in env until stop is called, and returns
// what it printed.
func serveCompany(t *testing.T, env Env, args ...string) (info companyServeInfo, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb syncBuffer
	env.Stdout, env.Stderr = pw, &errb
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"company", "serve"}, args...), env)
		pw.Close()
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Error("company serve did not stop")
			}
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("company serve printed nothing: %v; stderr %s", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("company serve printed %q: %v", line, err)
	}
	return info, stop
}

// TestCompanyServeState: `company serve --state DIR` keeps its CA and its port across starts,
// so a client that trusts its CA and a client_id registered with it keep working after a
// restart; without --agent-ca it trusts the developer CA of Poppydesk on the same machine, so
// `poppydesk check` in developer mode passes against it with no CA exchange.
func TestCompanyServeState(t *testing.T) {
	env := testEnv(t.TempDir())
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	devCA, err := app.EnsureDevCA(paths, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "company")
	first, stop := serveCompany(t, env, "--state", state)
	if first.AgentCA != devCA || first.CACert != filepath.Join(state, "refcompany-ca.pem") {
		t.Fatalf("agent_ca %q (want %q), ca_cert %q", first.AgentCA, devCA, first.CACert)
	}
	firstCA, err := os.ReadFile(first.CACert)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, env, "check", first.Domain, "--dev-company", first.Domain, "--dev-ca", first.CACert,
		"--probe-url", "https://"+first.Domain+"/api/products")
	if code != 0 {
		t.Fatalf("check against the Company that trusts the developer CA by itself: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stop()

	second, _ := serveCompany(t, env, "--state", state)
	secondCA, err := os.ReadFile(second.CACert)
	if err != nil {
		t.Fatal(err)
	}
	if second.Domain != first.Domain || string(secondCA) != string(firstCA) {
		t.Errorf("after a restart: %s (was %s), the same CA: %v", second.Domain, first.Domain, string(secondCA) == string(firstCA))
	}
	code, stdout, stderr = runCLI(t, env, "discover", second.Domain, "--dev-ca", first.CACert, "--dev-allow-loopback")
	if code != 0 || !strings.Contains(stdout, second.Domain) {
		t.Errorf("discover with the CA file of the first start: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
