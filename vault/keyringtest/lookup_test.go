//go:build !windows

package keyringtest

import (
	"os"
	"os/exec"
	"testing"
)

// lookupOutside reads an item with libsecret's secret-tool, independently of go-keyring.
func lookupOutside(t *testing.T, service, user string) (string, bool) {
	t.Helper()
	if _, err := exec.LookPath("secret-tool"); err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("secret-tool not found; install libsecret-tools")
		}
		t.Skip("secret-tool not found; install libsecret-tools to cross-check the keyring")
	}
	out, err := exec.Command("secret-tool", "lookup", "service", service, "username", user).Output()
	if err != nil {
		return "", false // secret-tool exits 1 when nothing matches
	}
	return string(out), true
}
