package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/poppydesk/poppydesk/vault"
)

// TestIdentityExportRealKeyring runs `identity export` against the real Secret Service (run the
// tests through scripts/with-keyring.sh): the root key is created in the OS keyring, a second
// export publishes the same key, and the private key is in the keyring item, not in the files.
func TestIdentityExportRealKeyring(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but there is no D-Bus session: run through scripts/with-keyring.sh")
		}
		t.Skip("no D-Bus session, so no Secret Service; run through scripts/with-keyring.sh")
	}
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	service := "poppydesk-test-" + hex.EncodeToString(buf)
	t.Setenv("POPPYDESK_KEYRING_SERVICE", service)
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // export also records the window's identity in the state database
	ctx := context.Background()
	t.Cleanup(func() { _ = vault.NewKeyring(vault.KeyringOptions{Service: service}).DeleteAll(ctx) })

	export := func() map[string]any {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		if code := run(ctx, []string{"identity", "export", "--client-id", "https://agent.example/agent.json", "--out", dir}, &out, &errb); code != 0 {
			t.Fatalf("export: code %d, stderr %s", code, errb.String())
		}
		raw, err := os.ReadFile(filepath.Join(dir, "jwks.json"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(`"d"`)) {
			t.Fatalf("jwks.json contains a private member: %s", raw)
		}
		var jwks map[string]any
		if err := json.Unmarshal(raw, &jwks); err != nil {
			t.Fatal(err)
		}
		return jwks
	}
	first, second := export(), export()
	k1 := first["keys"].([]any)[0].(map[string]any)["kid"]
	k2 := second["keys"].([]any)[0].(map[string]any)["kid"]
	if k1 == nil || k1 != k2 {
		t.Fatalf("second export published another key: %v vs %v", k1, k2)
	}
	// Cross-check with the system's own client that the root key item is in the keyring.
	if _, err := exec.LookPath("secret-tool"); err == nil {
		out, err := exec.Command("secret-tool", "lookup", "service", service, "username", "root").Output()
		if err != nil || !bytes.Contains(out, []byte(`"keys"`)) {
			t.Fatalf("secret-tool lookup of the root item: %v, %q", err, out)
		}
	}
}
