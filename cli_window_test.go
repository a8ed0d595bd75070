//go:build !desktop

package main

import (
	"bufio"
	"bytes"
	"context"
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
	for _, args := range [][]string{nil, {"window"}, {"demo"}, {"--debug"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "built without the desktop window; build it with `make build`") {
			t.Errorf("run(%q) = %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestHelpHidesWindowAndEachHasHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errb); code != 0 {
		t.Fatalf("help exited %d", code)
	}
	if strings.Contains(out.String(), "  window") || !strings.Contains(out.String(), "  demo") {
		t.Errorf("help should list demo and hide window:\n%s", out.String())
	}
	for _, c := range []string{"window", "demo"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{c, "--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "--e2e-listen") && !strings.Contains(errb.String(), "-e2e-listen") {
			t.Errorf("%s --help = %d:\n%s", c, code, errb.String())
		}
	}
	if code := run(context.Background(), []string{"window", "extra"}, &out, &errb); code != 2 {
		t.Errorf("window with an argument exited %d, want 2", code)
	}
}

// cookieJar keeps the bridge cookie for one host.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

func TestE2EListenServesTheWindowWithTheSameServices(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		t.Setenv(k, filepath.Join(dir, k))
	}
	dist := filepath.Join(dir, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html><head></head><body>x</body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"demo", "--e2e-listen", "127.0.0.1:0", "--e2e-dist", dist}, pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL printed: %v; stderr %s", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "Open ")
	if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/?token=") {
		t.Fatalf("printed %q", line)
	}
	jar := &cookieJar{}
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	origin := u[:strings.Index(u, "/?")]
	req, _ := http.NewRequest("POST", origin+"/bridge/call", strings.NewReader(`{"name":"app.Shell.Status","args":[]}`))
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
	log, err := os.ReadFile(filepath.Join(dir, "XDG_STATE_HOME", "poppydesk", "poppydesk.log"))
	if err != nil {
		t.Fatalf("no log file: %v", err)
	}
	if strings.Contains(string(log), u[strings.Index(u, "token=")+6:]) {
		t.Error("the bridge token was written to the log")
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the bridge did not stop after the context ended")
	}
	log, _ = os.ReadFile(filepath.Join(dir, "XDG_STATE_HOME", "poppydesk", "poppydesk.log"))
	if !strings.Contains(string(log), `"msg":"shutdown complete"`) {
		t.Errorf("no clean shutdown in the log:\n%s", log)
	}
}
