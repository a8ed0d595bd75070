//go:build !desktop

package cli

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWindowWithoutDesktopTagSaysHowToBuild(t *testing.T) {
	env := testEnv(t.TempDir())
	for _, args := range [][]string{nil, {"window"}, {"demo"}, {"--debug"}} {
		code, _, errs := runCLI(t, env, args...)
		if code != 1 || !strings.Contains(errs, "built without the desktop window; build it with `make build`") {
			t.Errorf("%q = %d, stderr %q", args, code, errs)
		}
	}
}

// cookieJar keeps the bridge cookie for one host.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

// TestDemoBridgeServesTheHost: `poppydesk demo --e2e-listen` builds the Host (with the reference
// Company), serves its services to a browser, writes its log without the bridge's token, and
// shuts down cleanly when its context ends.
func TestDemoBridgeServesTheHost(t *testing.T) {
	dir := t.TempDir()
	env := testEnv(dir)
	dist := filepath.Join(dir, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html><head></head><body>x</body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "state", "poppydesk", "poppydesk.log")
	t.Cleanup(func() {
		// Cleanups run last-first: this one after startCLI's has stopped the command.
		log, _ := os.ReadFile(logFile)
		if !strings.Contains(string(log), `"msg":"shutdown complete"`) {
			t.Errorf("no clean shutdown in the log:\n%s", log)
		}
	})
	line, _ := startCLI(t, env, "demo", "--e2e-listen", "127.0.0.1:0", "--e2e-dist", dist)
	u, ok := strings.CutPrefix(line, "Open ")
	if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/?token=") {
		t.Fatalf("printed %q", line)
	}
	c := &http.Client{Jar: &cookieJar{}, Timeout: 10 * time.Second}
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	origin := u[:strings.Index(u, "/?")]
	req, _ := http.NewRequest("POST", origin+"/bridge/call", strings.NewReader(`{"name":"fronts.Shell.Status","args":[]}`))
	req.Header.Set("Content-Type", "application/json")
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), "connected to the reference Company") {
		t.Errorf("demo status = %s (the demo must say it runs with the reference Company)", b)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("no log file: %v", err)
	}
	if strings.Contains(string(log), u[strings.Index(u, "token=")+6:]) {
		t.Error("the bridge token was written to the log")
	}
}
