package cli

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// testEnv is an Env with the user's folders under dir, secrets in memory and no session bus.
func testEnv(dir string) Env {
	vars := map[string]string{
		"XDG_DATA_HOME":            filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME":          filepath.Join(dir, "config"),
		"XDG_STATE_HOME":           filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR":          filepath.Join(dir, "run"),
		"LocalAppData":             filepath.Join(dir, "local"), // Windows
		"AppData":                  filepath.Join(dir, "roaming"),
		"DBUS_SESSION_BUS_ADDRESS": "disabled:",
	}
	return Env{Version: "test", Getenv: func(k string) string { return vars[k] }, Home: dir,
		Secrets: store.NewSecrets(store.NewMemoryKV())}
}

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *syncBuffer) Len() int       { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Len() }

// runCLI runs args to completion and returns the exit status, stdout and stderr.
func runCLI(t testing.TB, env Env, args ...string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	env.Stdout, env.Stderr = &out, &errb
	code := Run(context.Background(), args, env)
	return code, out.String(), errb.String()
}

// startCLI runs a long-running command until the test ends and returns its first output line.
func startCLI(t testing.TB, env Env, args ...string) (line string, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr = &syncBuffer{}
	env.Stdout, env.Stderr = pw, stderr
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, args, env)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("%s exited %d: %s", args[0], code, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop after its context ended", args[0])
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("%s printed nothing: %v; stderr %s", args[0], err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimSpace(line), stderr
}

// TestHelpAndUsage: `help` lists every command but the window; `--help` on any command prints
// its usage once, on stdout, and exits 0; usage errors are worded one way and exit 2.
func TestHelpAndUsage(t *testing.T) {
	env := testEnv(t.TempDir())
	code, out, _ := runCLI(t, env, "help")
	if code != 0 || strings.Contains(out, "  window ") || !strings.Contains(out, "  demo ") {
		t.Fatalf("help = %d:\n%s", code, out)
	}
	for _, c := range commands() {
		t.Run(c.name+" --help", func(t *testing.T) {
			code, out, errs := runCLI(t, env, c.name, "--help")
			if code != 0 || errs != "" || strings.Count(out, "Usage: poppydesk "+c.name) != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
			if !c.hidden && !strings.Contains(out, c.summary) {
				t.Fatalf("the usage lacks the summary: %q", out)
			}
		})
	}
	usage := []struct {
		args []string
		want string
	}{
		{[]string{"window", "extra"}, `takes no arguments, got "extra"`},
		{[]string{"version", "x"}, `takes no arguments, got "x"`},
		{[]string{"discover"}, "missing the Company's DOMAIN"},
		{[]string{"discover", "a.example", "b.example"}, `unexpected argument "b.example"`},
		{[]string{"identity", "export", "--out", "x"}, "--client-id and --out required"},
		{[]string{"example-agent"}, "--company required"},
		{[]string{"reset", "--nope"}, "-nope"},
		{[]string{"company", "serve", "--fault", "nope"}, `invalid --fault: the reference Company has no fault "nope"`},
		{[]string{"demo", "--fault", "nope"}, `invalid --fault: the reference Company has no fault "nope"`},
		{[]string{"company"}, `missing the subcommand "serve"`},
		{[]string{"company", "run"}, `unknown subcommand "run"; the only one is "serve"`},
		{[]string{"identity", "import"}, `unknown subcommand "import"; the only one is "export"`},
		{[]string{"discover", "a.example", "--dev-ca", "ca.pem"}, "--dev-ca is trusted only for the hosts of Companies under development"},
		{[]string{"mcp", "extra"}, "unexpected argument \"extra\"; the only mcp subcommand is `setup`"},
	}
	for _, u := range usage {
		code, out, errs := runCLI(t, env, u.args...)
		if code != 2 || out != "" || !strings.Contains(errs, u.want) || !strings.Contains(errs, "Usage: poppydesk "+u.args[0]) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q then the usage", u.args, code, out, errs, u.want)
		}
	}
	if code, _, errs := runCLI(t, env, "nonsense"); code != 2 || !strings.Contains(errs, `unknown subcommand "nonsense"`) {
		t.Errorf("an unknown subcommand: %d %q", code, errs)
	}
}

func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		args       []string
		positional []string
		ca         string
	}{
		{[]string{"a.example"}, []string{"a.example"}, ""},
		{[]string{"a.example", "--ca", "f"}, []string{"a.example"}, "f"},
		{[]string{"--ca", "f", "a.example"}, []string{"a.example"}, "f"},
		{[]string{"serve", "--ca", "f", "x"}, []string{"serve", "x"}, "f"},
		{[]string{"--", "--ca"}, []string{"--ca"}, ""},
	}
	for _, tc := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		ca := fs.String("ca", "", "")
		got, err := parseInterleaved(fs, tc.args)
		if err != nil || strings.Join(got, " ") != strings.Join(tc.positional, " ") || *ca != tc.ca {
			t.Errorf("%q: %q, ca %q, %v", tc.args, got, *ca, err)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, testEnv(t.TempDir()), "version")
	if code != 0 || out != "poppydesk test (Personal Agent Protocol 0.4, Operations extension v2)\n" {
		t.Fatalf("%d %q", code, out)
	}
}
