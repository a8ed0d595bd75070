package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
			if tt.format == "json" {
				var rep struct {
					Results []struct{ Status, Probe, Evidence string }
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatal(err)
				}
				for _, r := range rep.Results {
					if r.Status != "pass" {
						t.Errorf("%s: %s %s", r.Probe, r.Status, r.Evidence)
					}
				}
			}
		})
	}
}
