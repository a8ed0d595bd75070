package browser

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	// Chromium on Linux refuses to start as root with its sandbox, so Poppydesk turns it off
	// there; elsewhere the sandbox stays.
	rootHas, rootLack := []string{"--no-sandbox"}, []string{"--ignore-certificate-errors"}
	if runtime.GOOS != "linux" {
		rootHas, rootLack = nil, append(rootLack, "--no-sandbox")
	}
	for _, tc := range []struct {
		name      string
		o         Options
		has, lack []string
	}{
		{"headless as root", Options{Geteuid: func() int { return 0 }, TrustSPKI: []string{"abc="}},
			append([]string{"--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
				"--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--ignore-certificate-errors-spki-list=abc="}, rootHas...),
			rootLack},
		{"sandbox kept for a normal user", Options{Geteuid: func() int { return 1000 }}, []string{"--headless"}, []string{"--no-sandbox"}},
		{"visible", Options{Visible: true, Geteuid: func() int { return 1000 }}, []string{"--disable-sync"}, []string{"--headless"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := tc.o.Flags()
			for _, f := range tc.has {
				if !slices.Contains(fl, f) {
					t.Errorf("missing %s in %q", f, fl)
				}
			}
			for _, f := range tc.lack {
				if slices.Contains(fl, f) {
					t.Errorf("unexpected %s", f)
				}
			}
		})
	}
}

func TestFind(t *testing.T) {
	look := func(have string) func(string) (string, error) {
		return func(p string) (string, error) {
			if p == have {
				return p, nil
			}
			return "", errors.New("not found")
		}
	}
	if p, err := find([]string{"a", "b"}, look("b")); err != nil || p != "b" {
		t.Errorf("find = %q, %v", p, err)
	}
	_, err := find([]string{"a", "b"}, look("c"))
	if !errors.Is(err, ErrNoChrome) || !strings.Contains(err.Error(), "apt-get install chromium") {
		t.Errorf("no browser: %v", err)
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		if len(Candidates(goos)) == 0 {
			t.Errorf("no candidates for %s", goos)
		}
	}
}
