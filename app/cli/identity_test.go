package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

func TestIdentityExport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := testEnv(dir)

	t.Run("keyring unavailable", func(t *testing.T) {
		e := env
		e.Secrets = nil
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "no-bus"))
		code, _, errs := runCLI(t, e, "identity", "export", "--client-id", "https://agent.example/agent.json", "--out", t.TempDir())
		if code != 1 || !strings.Contains(errs, "keyring") {
			t.Fatalf("code %d, stderr %q", code, errs)
		}
	})
	usage := []struct {
		name string
		args []string
	}{
		{"no subcommand", []string{"identity"}},
		{"unknown subcommand", []string{"identity", "import"}},
		{"missing out", []string{"identity", "export", "--client-id", "https://agent.example/agent.json"}},
		{"http client id", []string{"identity", "export", "--client-id", "http://agent.example/agent.json", "--out", t.TempDir()}},
		{"extra argument", []string{"identity", "export", "--client-id", "https://agent.example/agent.json", "--out", t.TempDir(), "x"}},
	}
	for _, tt := range usage {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := runCLI(t, env, tt.args...); code != 2 {
				t.Fatalf("code = %d, want 2 (stderr %q)", code, errs)
			}
		})
	}
	t.Run("export", func(t *testing.T) {
		out1 := filepath.Join(t.TempDir(), "publish")
		code, out, errs := runCLI(t, env, "identity", "export", "--client-id", "https://agent.example/poppy/agent.json", "--out", out1, "--name", "My Agent")
		if code != 0 {
			t.Fatalf("code %d, stderr %q", code, errs)
		}
		var meta map[string]any
		raw, _ := os.ReadFile(filepath.Join(out1, "agent.json"))
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		if meta["client_id"] != "https://agent.example/poppy/agent.json" || meta["client_name"] != "My Agent" || meta["jwks_uri"] != "https://agent.example/poppy/jwks.json" {
			t.Fatalf("agent.json = %s", raw)
		}
		jwks, _ := os.ReadFile(filepath.Join(out1, "jwks.json"))
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal(jwks, &set); err != nil || len(set.Keys) != 1 || set.Keys[0]["d"] != nil {
			t.Fatalf("jwks.json = %s", jwks)
		}
		// The exported key is the stored root key: a second export publishes the same kid.
		out2 := filepath.Join(t.TempDir(), "again")
		if code, _, errs := runCLI(t, env, "identity", "export", "--client-id", "https://agent.example/poppy/agent.json", "--out", out2); code != 0 {
			t.Fatal(errs)
		}
		jwks2, _ := os.ReadFile(filepath.Join(out2, "jwks.json"))
		if !bytes.Equal(jwks, jwks2) {
			t.Fatal("a second export published another key")
		}
		if !strings.Contains(out, "Publish agent.json at https://agent.example/poppy/agent.json") {
			t.Fatalf("stdout = %q", out)
		}
	})
	// The export records the client_id where the Host reads it.
	t.Run("records the window's identity", func(t *testing.T) {
		const id = "https://agent.example/me/agent.json"
		code, out, errs := runCLI(t, env, "identity", "export", "--client-id", id, "--out", t.TempDir())
		if code != 0 {
			t.Fatalf("code %d, stderr %q", code, errs)
		}
		paths, _ := env.Paths()
		st, err := vault.OpenState(ctx, filepath.Join(paths.Data, app.StateFile), vault.StateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if got, err := st.GetSetting(ctx, app.SettingClientID); err != nil || got != id {
			t.Fatalf("setting %s = %q, %v; want %q", app.SettingClientID, got, err, id)
		}
		if !strings.Contains(out, "Recorded "+id) {
			t.Fatalf("stdout does not say the identity was recorded: %q", out)
		}
	})
}

// realKeyring gives a test the real Secret Service under a throwaway service name (run the
// tests through scripts/with-keyring.sh), or skips; POPPYDESK_REQUIRE_KEYRING=1 makes the skip
// a failure.
func realKeyring(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "linux" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but there is no D-Bus session: run through scripts/with-keyring.sh")
		}
		t.Skip("no D-Bus session, so no Secret Service; run through scripts/with-keyring.sh")
	}
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	service := "poppydesk-test-" + hex.EncodeToString(buf)
	t.Cleanup(func() { _ = vault.NewKeyring(vault.KeyringOptions{Service: service}).DeleteAll(context.Background()) })
	return service
}

// keyringEnv is testEnv over the real keyring of service.
func keyringEnv(t *testing.T, service string) Env {
	env := testEnv(t.TempDir())
	env.Secrets = nil
	get := env.Getenv
	env.Getenv = func(k string) string {
		if k == "POPPYDESK_KEYRING_SERVICE" {
			return service
		}
		return get(k)
	}
	return env
}

// TestIdentityExportRealKeyring runs `identity export` against the real Secret Service: the root
// key is created in the OS keyring, a second export publishes the same key, and the private key
// is in the keyring item, not in the files.
func TestIdentityExportRealKeyring(t *testing.T) {
	service := realKeyring(t)
	env := keyringEnv(t, service)
	export := func() any {
		dir := t.TempDir()
		if code, _, errs := runCLI(t, env, "identity", "export", "--client-id", "https://agent.example/agent.json", "--out", dir); code != 0 {
			t.Fatalf("export: code %d, stderr %s", code, errs)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "jwks.json"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(`"d"`)) {
			t.Fatalf("jwks.json contains a private member: %s", raw)
		}
		var jwks struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal(raw, &jwks); err != nil || len(jwks.Keys) != 1 {
			t.Fatalf("jwks.json %s: %v", raw, err)
		}
		return jwks.Keys[0]["kid"]
	}
	if k1, k2 := export(), export(); k1 == nil || k1 != k2 {
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
