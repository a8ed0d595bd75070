package app_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/poppydesk/poppydesk"

// deps lists the packages pkg imports, directly or not (go list -deps), without test files.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}

// TestDependencyRules holds the dependency rules of docs/DESIGN.md and docs/ARCHITECTURE.md:
// the protocol engine (agentcore) never imports the Host, the controlled browser or Wails; the
// controlled browser holds no key or token, so it imports none of the packages that keep or make
// them; the vault imports only the package whose interfaces and records it implements.
func TestDependencyRules(t *testing.T) {
	rules := []struct {
		pkg       string
		forbidden []string // import path prefixes
		allowed   []string // of this module, when set: nothing else of it
		why       string
	}{
		{pkg: module + "/agentcore/...", forbidden: []string{module + "/app", module + "/browser", "github.com/wailsapp/"},
			why: "the engine has no UI and never reaches the Host or the controlled browser"},
		{pkg: module + "/browser", allowed: []string{module + "/browser", module + "/agentcore/redact"},
			why: "the controlled browser holds no key or token: it gets a function that authorizes a code"},
		{pkg: module + "/browser", forbidden: []string{"github.com/zalando/go-keyring", "github.com/lestrrat-go/jwx"},
			why: "the controlled browser reads no keyring and signs nothing"},
		{pkg: module + "/vault", allowed: []string{module + "/vault", module + "/agentcore/store"},
			why: "the vault implements agentcore/store's interfaces and imports nothing else of Poppydesk"},
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			for _, d := range deps(t, r.pkg) {
				for _, f := range r.forbidden {
					if d == f || strings.HasPrefix(d, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(d, f+"/")) {
						t.Errorf("%s imports %s: %s", r.pkg, d, r.why)
					}
				}
				if r.allowed == nil || !strings.HasPrefix(d, module) {
					continue
				}
				ok := false
				for _, a := range r.allowed {
					ok = ok || d == a || strings.HasPrefix(d, a+"/")
				}
				if !ok {
					t.Errorf("%s imports %s: %s", r.pkg, d, r.why)
				}
			}
		})
	}
}

// TestMainImportsOnlyTheCommandLayer: package main's own imports of this module are app/cli
// alone (the composition lives in app, the commands in app/cli).
func TestMainImportsOnlyTheCommandLayer(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, module) && imp != module+"/app/cli" {
			t.Errorf("package main imports %s; it should hand over to app/cli only", imp)
		}
	}
}
