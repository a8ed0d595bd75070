package cli

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
)

// TestCheckCLI runs `poppydesk company serve` trusting Poppydesk's developer-mode CA, as a
// developer's Company would be configured, and `poppydesk check` against it in developer mode:
// the fault-free Company passes (exit 0); with a fault, the report names the broken rule and
// its section, and the exit status is 1.
func TestCheckCLI(t *testing.T) {
	env := testEnv(t.TempDir())
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	agentCA, err := app.EnsureDevCA(paths, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, fault, format string
		code                int
		want                string
	}{
		{"fault-free", "", "json", 0, `"status": "pass"`},
		{"listed version refused", "version-unsupported", "junit", 1, `type="MUST"`},
		{"text", "redirect-protected", "text", 1, "FAIL MUST   spec 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--agent-ca", agentCA}
			if tt.fault != "" {
				args = append(args, "--fault", tt.fault)
			}
			info := startCompanyCLI(t, args...)
			code, stdout, stderr := runCLI(t, env, "check", info.Domain, "--dev-company", info.Domain, "--dev-ca", info.CACert,
				"--probe-url", "https://"+info.Domain+"/api/products", "--format", tt.format)
			if code != tt.code || !strings.Contains(stdout, tt.want) {
				t.Fatalf("exit %d (want %d); stdout:\n%s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if tt.format == "junit" {
				validateJUnit(t, stdout)
			}
			if tt.format == "json" {
				var rep struct {
					Results []struct{ Status, Probe, Evidence string }
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatal(err)
				}
				for _, r := range rep.Results {
					if r.Status != "pass" && r.Status != "skip" {
						t.Errorf("%s: %s %s", r.Probe, r.Status, r.Evidence)
					}
				}
			}
		})
	}
}

// TestCheckCLIAllowActions is a full check of the reference Company in developer mode with every
// action allowed: the User signs in once in their browser (the test answers the consent page
// the opener was given, as the User would), the --operation request is performed once, a
// conversation is held and a feedback report sent. Every probe passes, none is skipped, and the
// sign-in is revoked at the end.
func TestCheckCLIAllowActions(t *testing.T) {
	env := testEnv(t.TempDir())
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := app.EnsureDevCA(paths, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	agentCA, err := app.ReadPEMCerts(caFile)
	if err != nil {
		t.Fatal(err)
	}
	s := poppytest.Start(t, refcompany.Options{AgentRootCAs: agentCA})
	s.SetDPoP(true)
	companyCA, err := s.WriteCAFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	env.OpenURL = func(authURL string) error {
		opened++
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		return s.ApproveSignIn(context.Background(), authURL, "dev@shop.example", strings.Fields(u.Query().Get("scope")))
	}
	opFile := filepath.Join(t.TempDir(), "operation.json")
	op := `{"method": "POST", "url": "` + s.URL(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges") + `",
		"body": {"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"},
		"changed": {"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-l"},
		"other": {"item_id": "itm_9Zt", "replacement_sku": "stormline-m"}}`
	if err := os.WriteFile(opFile, []byte(op), 0o644); err != nil {
		t.Fatal(err)
	}
	harFile := filepath.Join(t.TempDir(), "check.har")
	start := time.Now()
	code, stdout, stderr := runCLI(t, env, "check", s.Domain, "--dev-company", s.Domain, "--dev-ca", companyCA,
		"--probe-url", s.URL(refcompany.ShopHost, "/api/products"), "--signed-in-url", s.URL(refcompany.ShopHost, "/api/orders"),
		"--allow-actions", "sign-in,operation,conversation,feedback",
		"--operation", opFile, "--format", "json", "--har", harFile)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d; stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	var rep struct {
		Duration time.Duration `json:"duration_ns"`
		Results  []struct{ Status, Probe, Evidence string }
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("a full check with every action allowed: %d probes, %v (the command: %v; it waits the device polling interval, 5 s, meanwhile)", len(rep.Results), rep.Duration, took)
	for _, r := range rep.Results {
		if r.Status != "pass" {
			t.Errorf("%s: %s %s", r.Probe, r.Status, r.Evidence)
		}
	}
	if opened != 1 || !strings.Contains(stderr, "sign in to "+s.Domain+" in your browser") {
		t.Errorf("the browser was opened %d times; stderr: %s", opened, stderr)
	}
	if n := len(s.Ledger()); n != 1 {
		t.Errorf("the Company performed %d operations, want 1", n)
	}
	if n := s.ActiveRefreshTokens(""); n != 0 {
		t.Errorf("%d refresh tokens still active after the check", n)
	}
	checkHAR(t, harFile, s)
}

// checkHAR: the --har archive of a check holds every request the Company received from it
// (those to the reference Company's hosts; the browser's sign-in pages aside), each with its
// answer and the cause "check", and none of the secrets those requests carried: Session JWTs,
// delegations, access and refresh tokens, DPoP proofs, client assertions, codes and verifiers.
func checkHAR(t *testing.T, file string, s *refcompany.Server) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var har struct {
		Log struct {
			Entries []struct {
				Request struct {
					Method, URL string
				}
				Response struct{ Status int }
				Comment  string
			}
		}
	}
	if err := json.Unmarshal(raw, &har); err != nil {
		t.Fatal(err)
	}
	// Every request the Company received came from check, but the two of the User's browser
	// (ApproveSignIn: the consent page and its answer).
	if want := len(s.Requests()) - 2; len(har.Log.Entries) != want {
		t.Errorf("the archive has %d entries; the Company received %d requests from check", len(har.Log.Entries), want)
	}
	for _, e := range har.Log.Entries {
		if !strings.Contains(e.Comment, "cause: check") || e.Response.Status == 0 {
			t.Errorf("%s %s: status %d, comment %q", e.Request.Method, e.Request.URL, e.Response.Status, e.Comment)
		}
	}
	var secrets []string
	for _, r := range s.Requests() {
		for _, h := range []string{"Poppy-Session", "Authorization", "Dpop", "Poppy-Approval"} {
			v := r.Header.Get(h)
			if _, tok, ok := strings.Cut(v, " "); ok && h == "Authorization" {
				v = tok
			}
			if len(v) > 20 && h != "Poppy-Approval" {
				secrets = append(secrets, v)
				// Each part of a JWT on its own gives it away too (its signature above all).
				if parts := strings.Split(v, "."); len(parts) == 3 {
					secrets = append(secrets, parts[2])
				}
			}
		}
		if q, err := url.ParseQuery(string(r.Body)); err == nil {
			for _, k := range []string{"client_assertion", "code", "code_verifier", "refresh_token", "token", "device_code"} {
				if v := q.Get(k); len(v) > 12 {
					secrets = append(secrets, v)
				}
			}
		}
	}
	if len(secrets) < 50 {
		t.Fatalf("only %d secrets to look for", len(secrets))
	}
	for _, sec := range secrets {
		if i := strings.Index(string(raw), sec); i >= 0 {
			t.Errorf("the archive holds a secret the check sent: %.24s… in %s", sec, raw[max(0, i-600):i+50])
		}
	}
	t.Logf("the archive: %d entries; %d secrets looked for, none found", len(har.Log.Entries), len(secrets))
}

// TestCheckCLITimeout: a Company whose discovery documents never finish answering fails
// transport.answers-in-time after --timeout, and check ends.
func TestCheckCLITimeout(t *testing.T) {
	env := testEnv(t.TempDir())
	info := startCompanyCLI(t, "--fault", "hang-discovery")
	code, stdout, stderr := runCLI(t, env, "check", info.Domain, "--dev-company", info.Domain, "--dev-ca", info.CACert, "--timeout", "1s")
	if code != 1 || !strings.Contains(stdout, "FAIL SHOULD spec 3                 transport: discovery answers in time: a discovery document did not answer within 1s") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	for _, bad := range [][]string{{"--allow-actions", "nope"}, {"--timeout", "0s"}, {"--operation", "/nonexistent.json"}} {
		if code, _, stderr := runCLI(t, env, append([]string{"check", "shop.localhost"}, bad...)...); code != 2 {
			t.Errorf("check %v: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}
