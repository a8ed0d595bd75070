package browser

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// ErrNoChrome says no Chrome, Chromium or Edge was found.
var ErrNoChrome = errors.New("browser: no Chrome, Chromium or Microsoft Edge is installed; install one (on Debian: apt-get install chromium) or set its path in Options.ExecPath")

// Candidates lists where Chrome, Chromium and Edge are looked for on goos, in order.
func Candidates(goos string) []string {
	switch goos {
	case "darwin":
		return []string{
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
			"/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
		}
	case "windows":
		var out []string
		for _, env := range []string{"ProgramFiles", "ProgramFiles(x86)", "LocalAppData"} {
			if d := os.Getenv(env); d != "" {
				out = append(out, filepath.Join(d, `Google\Chrome\Application\chrome.exe`),
					filepath.Join(d, `Chromium\Application\chrome.exe`),
					filepath.Join(d, `Microsoft\Edge\Application\msedge.exe`))
			}
		}
		return append(out, "chrome.exe", "msedge.exe")
	default:
		return []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome",
			"/usr/bin/google-chrome-stable", "/snap/bin/chromium", "/usr/bin/microsoft-edge",
			"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "microsoft-edge"}
	}
}

// Find returns the first installed browser of Candidates(runtime.GOOS), or ErrNoChrome.
func Find() (string, error) { return find(Candidates(runtime.GOOS), exec.LookPath) }

func find(cands []string, look func(string) (string, error)) (string, error) {
	for _, c := range cands {
		if p, err := look(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (looked for: %s)", ErrNoChrome, strings.Join(cands, ", "))
}

// SPKIHash is the base64 SHA-256 of a certificate's public key, the form
// --ignore-certificate-errors-spki-list takes: it trusts that key only.
func SPKIHash(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Options configure one launched browser.
type Options struct {
	// ExecPath is the browser to run ("" finds one with Find).
	ExecPath string
	// ProfileDir is the browser's own profile directory (required; one per Company Session).
	ProfileDir string
	// Visible shows a window (for a user or developer who wants to watch); headless otherwise.
	Visible bool
	// TrustSPKI are base64 SHA-256 hashes of public keys to trust (the demo's leaf key only).
	TrustSPKI []string
	// WindowWidth and WindowHeight are the viewport (default 1280×900).
	WindowWidth, WindowHeight int
	// Logger (nil: discard). Browser output is not logged.
	Logger *slog.Logger
	// Geteuid decides whether --no-sandbox is needed (nil: os.Geteuid); tests replace it.
	Geteuid func() int
}

// Flags returns the browser's command-line flags for o (without the user data dir and the
// executable), in a stable order. --no-sandbox is there only when running as root on Linux.
func (o Options) Flags() []string {
	w, h := o.WindowWidth, o.WindowHeight
	if w <= 0 || h <= 0 {
		w, h = 1280, 900
	}
	var fl []string
	if !o.Visible {
		fl = append(fl, "--headless")
	}
	euid := os.Geteuid
	if o.Geteuid != nil {
		euid = o.Geteuid
	}
	if runtime.GOOS == "linux" && euid() == 0 {
		fl = append(fl, "--no-sandbox")
	}
	fl = append(fl, "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--disable-dev-shm-usage", "--disable-default-apps",
		"--disable-extensions", "--password-store=basic", "--disable-features=BackForwardCache", fmt.Sprintf("--window-size=%d,%d", w, h))
	if len(o.TrustSPKI) > 0 {
		fl = append(fl, "--ignore-certificate-errors-spki-list="+strings.Join(o.TrustSPKI, ","))
	}
	return fl
}

// allocatorOptions turns Flags into chromedp options.
func (o Options) allocatorOptions(path string) []chromedp.ExecAllocatorOption {
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(o.ProfileDir),
		chromedp.Env("DBUS_SESSION_BUS_ADDRESS=disabled:")}
	for _, f := range o.Flags() {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasVal {
			opts = append(opts, chromedp.Flag(name, val))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// process is one running browser with its one tab.
type process struct {
	allocCancel context.CancelFunc
	tabCancel   context.CancelFunc
	tab         context.Context
}

// launch starts the browser and waits until its tab answers.
func launch(o Options) (*process, error) {
	if o.ProfileDir == "" {
		return nil, errors.New("browser: Options.ProfileDir is required: each Company Session has its own profile directory")
	}
	if err := os.MkdirAll(o.ProfileDir, 0o700); err != nil {
		return nil, fmt.Errorf("browser: creating the profile directory %s: %w", o.ProfileDir, err)
	}
	path := o.ExecPath
	if path == "" {
		var err error
		if path, err = Find(); err != nil {
			return nil, err
		}
	}
	// The browser lives until Close, not until the caller's context ends.
	actx, acancel := chromedp.NewExecAllocator(context.Background(), o.allocatorOptions(path)...)
	tab, tcancel := chromedp.NewContext(actx)
	start := make(chan error, 1)
	go func() { start <- chromedp.Do(tab, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-start:
		if err != nil {
			tcancel()
			acancel()
			return nil, fmt.Errorf("browser: starting %s failed: %w (is it a working Chrome or Chromium? on Linux as root it needs --no-sandbox, which is added automatically)", path, err)
		}
	case <-time.After(60 * time.Second):
		tcancel()
		acancel()
		return nil, fmt.Errorf("browser: %s did not start within 60 s", path)
	}
	return &process{allocCancel: acancel, tabCancel: tcancel, tab: tab}, nil
}

func (p *process) close() {
	if p == nil {
		return
	}
	p.tabCancel()
	p.allocCancel()
}
