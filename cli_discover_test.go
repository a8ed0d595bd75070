package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// startCompanyCLI runs `poppydesk company serve` through run() and returns its JSON line.
func startCompanyCLI(t *testing.T, args ...string) companyServeInfo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"company", "serve"}, args...), pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("company serve exited %d: %s", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("company serve did not stop on cancel")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading company serve output: %v (stderr %s)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	var info companyServeInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("company serve printed %q: %v", line, err)
	}
	return info
}

func TestCompanyServeAndDiscover(t *testing.T) {
	info := startCompanyCLI(t)
	if info.CACert == "" || !strings.HasPrefix(info.Domain, "shop.localhost:") || info.Issuer == "" || info.PoppyJSON != "https://"+info.Domain+"/.well-known/poppy.json" {
		t.Fatalf("info = %+v", info)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"discover", info.Domain, "--dev-ca", info.CACert, "--dev-allow-loopback"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("discover exited %d: %s", code, stderr.String())
	}
	var out struct {
		Identifier   string `json:"identifier"`
		Issuer       string `json:"issuer"`
		Version      string `json:"version"`
		Organization struct{ Domain string }
		Channels     struct{ APIs []any }
		Extensions   map[string][]struct{ Version string }
		Scopes       []struct {
			Name, Changes string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("discover printed %s: %v", stdout.String(), err)
	}
	if out.Identifier != info.Issuer || out.Version != "0.4" || out.Organization.Domain != info.Domain || len(out.Channels.APIs) != 2 ||
		out.Extensions["operations"][0].Version != "2" || len(out.Scopes) != 2 || out.Scopes[0].Changes != "none" {
		t.Fatalf("discover output = %s", stdout.String())
	}
}

func TestDiscoverFailuresCLI(t *testing.T) {
	info := startCompanyCLI(t, "--fault", "domain-mismatch", "--fault", "issuer-mismatch")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"named check and section", []string{"discover", info.Domain, "--dev-ca", info.CACert, "--dev-allow-loopback"}, 1, `check "organization.domain" failed (spec 3, 3.1)`},
		{"no dev mode: loopback refused", []string{"discover", "127.0.0.1:" + strings.TrimPrefix(info.Listen, "127.0.0.1:")}, 1, "loopback"},
		{"dev mode without the CA", []string{"discover", info.Domain, "--dev-allow-loopback"}, 1, "certificate"},
		{"--dev-ca alone", []string{"discover", info.Domain, "--dev-ca", info.CACert}, 2, "--dev-allow-loopback"},
		{"no domain", []string{"discover"}, 2, "domain"},
		{"unknown fault", []string{"company", "serve", "--fault", "nope"}, 2, "known faults"},
		{"company without serve", []string{"company"}, 2, "company serve"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.want)
			}
			if tc.code != 0 && stdout.Len() != 0 {
				t.Fatalf("failure printed to stdout: %s", stdout.String())
			}
		})
	}
}
