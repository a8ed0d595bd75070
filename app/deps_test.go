package app_test

import (
	"os/exec"
	"slices"
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
// them; the vault imports only the package whose interfaces and records it implements; the
// product and the reference Company it runs link no test support or test-only library, and the
// product no library whose initialisation slows every start.
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
		{pkg: module, forbidden: []string{"github.com/ory/", "github.com/go-jose/go-jose/v3"},
			why: "fosite and its JOSE library run only as the fosite-based Company of check's tests (agentcore/conformance/fositetest)"},
		{pkg: module, forbidden: []string{"testing", module + "/agentcore/poppytest"},
			why: "the product links no test support"},
		{pkg: module, forbidden: []string{"github.com/santhosh-tekuri/jsonschema/", "github.com/getkin/kin-openapi/"},
			why: "santhosh-tekuri/jsonschema (which kin-openapi imports) compiles five meta-schemas at every start of the program, half of an MCP client's wait for `poppydesk mcp` (agentcore/apis doc)"},
		{pkg: module + "/agentcore/refcompany", forbidden: []string{"testing", module + "/agentcore/poppytest"},
			why: "the reference Company runs in the product (poppydesk demo, company serve) and links no test support"},
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

// imports lists the packages pkg (a pattern) imports directly, by importing package, without
// test files.
func imports(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pkg)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[f[0]] = f[1:]
	}
	return m
}

// TestWindowServicesRule holds the rule of the window's services (app/fronts, docs/ARCHITECTURE.md
// "The window"): they are views over the Host, so of this module they import only app (the Host)
// and agentcore (the types the Host's parts return), never the controlled browser, the vault or
// Wails; and only the command layer (app/cli), which opens the window, builds and binds them (and
// the test fixture app/apptest, which signs in through them as a user does). The Host cannot
// import them (that would be a cycle): what lasts and runs stays in app.
func TestWindowServicesRule(t *testing.T) {
	const fronts = module + "/app/fronts"
	for _, imp := range imports(t, fronts)[fronts] {
		if strings.HasPrefix(imp, "github.com/wailsapp/") ||
			strings.HasPrefix(imp, module) && imp != module+"/app" && !strings.HasPrefix(imp, module+"/agentcore/") {
			t.Errorf("app/fronts imports %s: the window's services reach only the Host (app) and agentcore's types", imp)
		}
	}
	for pkg, imps := range imports(t, module+"/...") {
		if slices.Contains(imps, fronts) && pkg != module+"/app/cli" && pkg != module+"/app/apptest" {
			t.Errorf("%s imports app/fronts: only the command layer (app/cli) builds and binds the window's services", pkg)
		}
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
