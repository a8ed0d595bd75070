package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// startCompanyCLI runs `poppydesk company serve` and returns its JSON line.
func startCompanyCLI(t *testing.T, args ...string) companyServeInfo {
	t.Helper()
	line, stderr := startCLI(t, testEnv(t.TempDir()), append([]string{"company", "serve"}, args...)...)
	var info companyServeInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("company serve printed %q: %v (stderr %s)", line, err, stderr.String())
	}
	return info
}

func TestCompanyServeAndDiscover(t *testing.T) {
	info := startCompanyCLI(t)
	if info.CACert == "" || !strings.HasPrefix(info.Domain, "shop.localhost:") || info.Issuer == "" || info.PoppyJSON != "https://"+info.Domain+"/.well-known/poppy.json" {
		t.Fatalf("info = %+v", info)
	}
	code, stdout, stderr := runCLI(t, testEnv(t.TempDir()), "discover", info.Domain, "--dev-ca", info.CACert, "--dev-allow-loopback")
	if code != 0 {
		t.Fatalf("discover exited %d: %s", code, stderr)
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
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("discover printed %s: %v", stdout, err)
	}
	if out.Identifier != info.Issuer || out.Version != "0.4" || out.Organization.Domain != info.Domain || len(out.Channels.APIs) != 2 ||
		out.Extensions["operations"][0].Version != "2" || len(out.Scopes) != 2 || out.Scopes[0].Changes != "none" {
		t.Fatalf("discover output = %s", stdout)
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
		{"no domain", []string{"discover"}, 2, "DOMAIN"},
		{"unknown fault", []string{"company", "serve", "--fault", "nope"}, 2, "faults are"},
		{"company without serve", []string{"company"}, 2, `missing the subcommand "serve"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, testEnv(t.TempDir()), tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
			if tc.code != 0 && stdout != "" {
				t.Fatalf("failure printed to stdout: %s", stdout)
			}
		})
	}
}
