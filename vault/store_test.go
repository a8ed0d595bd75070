package vault_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// The vault implements agentcore/store's interfaces with its records, so the engine, the approval
// queue and the conversation manager take it as it is.
var (
	_ store.KV              = (*vault.Keyring)(nil)
	_ store.Settings        = (*vault.State)(nil)
	_ store.EngineState     = (*vault.State)(nil)
	_ store.Approvals       = (*vault.State)(nil)
	_ store.Transcripts     = (*vault.State)(nil)
	_ store.FeedbackReports = (*vault.State)(nil)
)

// TestImportsOnlyStore checks the import rule of docs/DESIGN.md: of Poppydesk's own packages, the
// vault imports only agentcore/store, directly or through other packages.
func TestImportsOnlyStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	// -deps lists the package itself last.
	self, module, _ := strings.Cut(lines[len(lines)-1], " ")
	if module == "" || !strings.HasSuffix(self, "/vault") {
		t.Fatalf("go list -deps did not end with the vault package and its module: %q", lines[len(lines)-1])
	}
	allowed := map[string]bool{self: true, module + "/agentcore/store": true}
	for _, l := range lines {
		pkg, mod, _ := strings.Cut(l, " ")
		if mod == module && !allowed[pkg] {
			t.Errorf("vault imports %s; of Poppydesk it may import only agentcore/store (docs/DESIGN.md)", pkg)
		}
	}
}
