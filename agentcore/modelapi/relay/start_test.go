package relay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
	"github.com/poppydesk/poppydesk/agentcore/modelapi/relay"
)

// envApp makes this test binary act as the app the relay starts, in one of the ways an app
// ends: "crash" (a Go panic, as GTK's without a display), "handover" (exit 0 at once, as a
// second launch does when a window already runs), "hang" (never listens), "serve" (listens at
// the endpoint in envEndpoint and serves one MCP session), "mark" (writes envMark and exits).
const (
	envApp      = "POPPYDESK_RELAY_TEST_APP"
	envEndpoint = "POPPYDESK_RELAY_TEST_ENDPOINT"
	envMark     = "POPPYDESK_RELAY_TEST_MARK"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envApp) {
	case "":
		os.Exit(m.Run())
	case "crash":
		fmt.Fprint(os.Stderr, "\n(poppydesk:4242): Gtk-WARNING **: 10:00:00.000: cannot open display: \npanic: failed to init GTK\n\ngoroutine 1 [running, locked to thread]:\ngithub.com/wailsapp/wails/v2/internal/frontend/desktop/linux.NewFrontend(...)\n\t/root/go/pkg/mod/github.com/wailsapp/wails/v2@v2.9.2/internal/frontend/desktop/linux/frontend.go:123 +0x6b5\n")
		os.Exit(2)
	case "handover":
		fmt.Println("Poppydesk is already running; its window is now in front.")
		os.Exit(0)
	case "hang":
		time.Sleep(10 * time.Second)
	case "mark":
		os.WriteFile(os.Getenv(envMark), []byte("started"), 0o600)
	case "serve":
		serveOnce(os.Getenv(envEndpoint))
	}
	os.Exit(0)
}

// serveOnce listens at path, serves one MCP session, and exits when it ends.
func serveOnce(path string) {
	ln, err := endpoint.Listen(context.Background(), path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c, err := ln.Accept()
	if err != nil {
		os.Exit(1)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "started-by-the-relay", Version: "1"}, nil)
	ss, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: c, Writer: c}, nil)
	if err == nil {
		ss.Wait()
	}
	ln.Close()
}

// scratch is a temporary folder. (Not t.TempDir: under Wine 8 its removal fails with "Invalid
// function", which fails the test.)
func scratch(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pdrs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestStartWords: when nothing answers, the relay starts the app or says, as the answer to the
// client's initialize, exactly why it could not: no display (the app is then not even run), a
// crash (its first line, never a stack trace), a window already running that took the launch
// over (never "not running … already running"), an app that never listens, a missing program,
// and --no-start. A started app that listens is reached, and outlives the relay.
func TestStartWords(t *testing.T) {
	display := func(k string) string { return map[string]string{"DISPLAY": ":99"}[k] }
	noDisplay := func(string) string { return "" }
	cases := []struct {
		name    string
		mode    string
		app     string // "" : this test binary in mode
		noStart bool
		getenv  func(string) string
		wait    time.Duration
		want    []string
		notWant []string
	}{
		{name: "no display", mode: "mark", getenv: noDisplay, want: []string{"Poppydesk is not running, and it cannot be started from here", "without a display", "DISPLAY", "WAYLAND_DISPLAY", "Start Poppydesk from your desktop's menu"}},
		{name: "crash", mode: "crash", getenv: display, want: []string{"Poppydesk is not running, and the copy started here", "stopped at once", `"panic: failed to init GTK"`, "Its output is in"}, notWant: []string{"goroutine", "frontend.go", "Gtk-WARNING"}},
		{name: "a window already runs", mode: "handover", getenv: display, want: []string{"A Poppydesk window is already running, but its model interface does not answer at", "another home folder", "Close Poppydesk, start it again"}, notWant: []string{"not running"}},
		{name: "never listens", mode: "hang", getenv: display, wait: time.Second, want: []string{"Poppydesk was started", "did not open its model interface at", "within 1s"}},
		{name: "missing program", app: filepath.Join(scratch(t), "no-such-poppydesk"), getenv: display, want: []string{"Poppydesk is not running, and starting", "no-such-poppydesk", "failed"}},
		{name: "--no-start", mode: "mark", noStart: true, getenv: display, want: []string{"Poppydesk is not running: nothing answers at", "--no-start"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "no display" && runtime.GOOS == "windows" {
				t.Skip("a Windows session always has a desktop")
			}
			path := testEndpoint(t)
			mark := filepath.Join(scratch(t), "started")
			t.Setenv(envApp, c.mode)
			t.Setenv(envMark, mark)
			app := c.app
			if app == "" {
				app = os.Args[0]
			}
			s := startRelay(t, relay.Options{Endpoint: path, App: app, NoStart: c.noStart, Getenv: c.getenv, StartWait: c.wait})
			s.send(initialize)
			r := s.answer("1")
			if r.Error == nil || r.Error.Code != relay.CodeUnavailable {
				t.Fatalf("initialize got %s", r.raw)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Error.Message, w) {
					t.Errorf("the answer lacks %q: %s", w, r.Error.Message)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(r.Error.Message, w) {
					t.Errorf("the answer has %q: %s", w, r.Error.Message)
				}
			}
			if _, err := os.Stat(mark); c.mode == "mark" && err == nil {
				t.Errorf("the app was started")
			}
			if !strings.Contains(s.stderr.String(), r.Error.Message) {
				t.Errorf("stderr does not have the answer: %s", s.stderr)
			}
			t.Logf("%s", r.Error.Message)
			if _, out, ok := strings.Cut(r.Error.Message, "Its output is in "); ok {
				os.Remove(strings.SplitN(out, ". ", 2)[0])
			}
		})
	}
	t.Run("starts the app", func(t *testing.T) {
		path := testEndpoint(t)
		t.Setenv(envApp, "serve")
		t.Setenv(envEndpoint, path)
		s := startRelay(t, relay.Options{Endpoint: path, App: os.Args[0], Getenv: display})
		s.send(initialize)
		if r := s.answer("1"); r.Error != nil || !strings.Contains(string(r.Result), "started-by-the-relay") {
			t.Fatalf("initialize through a started app: %s (stderr %s)", r.raw, s.stderr)
		}
		if !strings.Contains(s.stderr.String(), "nothing answers at "+path+"; started "+os.Args[0]) {
			t.Errorf("stderr: %s", s.stderr)
		}
	})
}
