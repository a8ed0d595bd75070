package app_test

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/browser"
)

// TestDemoSignInOpensTrustingBrowser: in demo mode Direct Sign-In opens Poppydesk's own Chromium
// in a visible window that trusts exactly the reference Company's certificate key, with a
// profile of its own, never with certificate errors ignored. The browser is a stand-in script
// that records its command line: this test is about what Poppydesk asks the browser to do (the
// real window under Xvfb shows the sign-in page without a warning, see scripts/smoke.sh).
func TestDemoSignInOpensTrustingBrowser(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in browser is a shell script, which Windows cannot start")
	}
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	exe := filepath.Join(dir, "chromium")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > "+args+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := apptest.Start(t, apptest.Options{Demo: true, Edit: func(c *app.Config) {
		c.Opener = nil
		c.Browser = browser.Options{ExecPath: exe}
	}})
	demo, _ := f.Host.Demo()
	flow, err := f.Fronts().SignIn.StartDirect(demo.Identifier, "second", []string{"orders:read"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Fronts().SignIn.Cancel(flow.ID)
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(args); err == nil && len(b) > 0 && strings.HasSuffix(string(b), "\n") {
			got = strings.Split(strings.TrimSpace(string(b)), "\n")
			if slices.Contains(got, flow.URL) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo's browser was not started with the sign-in URL; it got %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.Company.Port)), &tls.Config{ServerName: refcompany.ShopHost, RootCAs: f.Company.CA().Pool()})
	if err != nil {
		t.Fatal(err)
	}
	key := browser.SPKIHash(conn.ConnectionState().PeerCertificates[0])
	conn.Close()
	if !slices.Contains(got, "--ignore-certificate-errors-spki-list="+key) {
		t.Errorf("the browser does not trust exactly the demo's key %s: %q", key, got)
	}
	for _, a := range got {
		if a == "--headless" || a == "--ignore-certificate-errors" {
			t.Errorf("the browser was started with %s", a)
		}
	}
	if want := "--user-data-dir=" + filepath.Join(f.Config.Paths.Data, "browser", "demo-sign-in"); !slices.Contains(got, want) {
		t.Errorf("the browser has no profile of its own (%s): %q", want, got)
	}
}
