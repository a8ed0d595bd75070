package browser_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/browser"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// display returns an X display for a visible browser: $DISPLAY, or an Xvfb this test starts
// (and stops at cleanup). It skips when there is neither, and fails under
// POPPYDESK_REQUIRE_E2E=1.
func display(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DISPLAY"); d != "" {
		return d
	}
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatalf("POPPYDESK_REQUIRE_E2E=1 but there is no DISPLAY and no Xvfb to start one (apt-get install xvfb): %v", err)
		}
		t.Skip("a visible browser needs a display: there is no DISPLAY and no Xvfb (apt-get install xvfb); set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
	}
	// -displayfd lets Xvfb choose a free display and write its number on fd 3, so parallel
	// runs don't collide.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		got <- strings.TrimSpace(line)
	}()
	select {
	case n := <-got:
		if n == "" {
			t.Fatal("Xvfb did not report its display number")
		}
		return ":" + n
	case <-time.After(20 * time.Second):
		t.Fatal("Xvfb did not start within 20 s")
	}
	return ""
}

// browserProcesses returns the command lines of the main browser processes (not its helper
// processes) that use profile.
func browserProcesses(t *testing.T, profile string) [][]string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, d := range dirs {
		raw, err := os.ReadFile(d)
		if err != nil || len(raw) == 0 {
			continue
		}
		// Chromium rewrites its command line in place (one space-separated string).
		args := strings.FieldsFunc(string(raw), func(r rune) bool { return r == 0 || r == ' ' })
		var mine, helper bool
		for _, a := range args {
			mine = mine || a == "--user-data-dir="+profile
			helper = helper || strings.HasPrefix(a, "--type=")
		}
		if mine && !helper {
			out = append(out, args)
		}
	}
	return out
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// TestSetVisible: the window's "open the same Session visibly" button (SetVisible) restarts the
// joined browser with a window under a display (Xvfb here): the visible Chrome runs without
// --headless, the website still recognizes it as the Session, and the headless Chrome is gone.
func TestSetVisible(t *testing.T) {
	w := newWorld(t)
	t.Setenv("DISPLAY", display(t))
	ctx := context.Background()
	profile := t.TempDir()
	endpoint, site := browserjoin.Endpoint(w.co)
	b, err := browser.Open(browser.Config{Options: browser.Options{ExecPath: w.chrome, ProfileDir: profile, TrustSPKI: []string{w.spki}},
		Website: []string{site}, Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if _, err := w.j.Ensure(ctx, b, w.co.Identifier, ""); err != nil {
		t.Fatal(err)
	}
	if v := visitor(t, b, w); !strings.Contains(v, "is the Personal Agent's Session") {
		t.Fatalf("headless, joined: %q", v)
	}
	headless := browserProcesses(t, profile)
	if len(headless) != 1 || !hasFlag(headless[0], "--headless") {
		t.Fatalf("before: browser processes %q, want one headless", headless)
	}
	joins := len(w.s.Joins())

	if err := b.SetVisible(ctx, true); err != nil {
		t.Fatal(err)
	}
	if !b.Visible() {
		t.Error("Visible() is false after SetVisible(true)")
	}
	procs := browserProcesses(t, profile)
	if len(procs) != 1 || hasFlag(procs[0], "--headless") {
		t.Fatalf("after: browser processes %q, want one without --headless (the headless one closed)", procs)
	}
	if v := visitor(t, b, w); !strings.Contains(v, "is the Personal Agent's Session") {
		t.Errorf("visible: the website does not recognize the Session: %q", v)
	}
	if ok, err := b.Recognized(ctx); err != nil || !ok {
		t.Errorf("visible: Recognized %v, %v", ok, err)
	}
	if _, err := w.j.Ensure(ctx, b, w.co.Identifier, ""); err != nil || len(w.s.Joins()) != joins {
		t.Errorf("the visible browser joined again (%v, %d joins, want %d): it should carry the same Session", err, len(w.s.Joins()), joins)
	}
	if _, _, err := b.Screenshot(ctx); err != nil {
		t.Errorf("screenshot of the visible browser: %v", err)
	}
	// And back to headless, still the same Session.
	if err := b.SetVisible(ctx, false); err != nil {
		t.Fatal(err)
	}
	if procs := browserProcesses(t, profile); len(procs) != 1 || !hasFlag(procs[0], "--headless") {
		t.Fatalf("back to headless: browser processes %q", procs)
	}
	if v := visitor(t, b, w); !strings.Contains(v, "is the Personal Agent's Session") {
		t.Errorf("headless again: %q", v)
	}
}

// BenchmarkJoin compares a cold start (launching Chrome with a fresh profile, joining, closing)
// against the baseline of a join with Chrome already running (warm), interleaved in one loop.
// Each op takes about 0.1–1 s, so run it with a small -benchtime, e.g. -benchtime=5x.
func BenchmarkJoin(b *testing.B) {
	w := newWorld(b)
	ctx := context.Background()
	endpoint, site := browserjoin.Endpoint(w.co)
	cl, err := w.e.Client(ctx, w.co.Identifier, "")
	if err != nil {
		b.Fatal(err)
	}
	authorize := browserjoin.Authorizer(cl, endpoint, nil)
	open := func(b *testing.B) *browser.Session {
		s, err := browser.Open(browser.Config{Options: browser.Options{ExecPath: w.chrome, ProfileDir: b.TempDir(), TrustSPKI: []string{w.spki}},
			Website: []string{site}, Endpoint: endpoint})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	warm := open(b)
	defer warm.Close()
	join := func(b *testing.B, s *browser.Session) {
		if err := s.Join(ctx, endpoint, authorize); err != nil {
			b.Fatal(err)
		}
	}
	benchratio.Run(b, "cold", "warm", func(b *testing.B) {
		s := open(b)
		defer s.Close()
		join(b, s)
	}, func(b *testing.B) { join(b, warm) })
	if n := len(w.s.Joins()); n == 0 {
		b.Fatal("no join reached the Company")
	}
}
