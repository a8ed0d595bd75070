package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

func TestIdentityExport(t *testing.T) {
	ctx := context.Background()
	saved, savedDir := identityStore, windowDataDir
	t.Cleanup(func() { identityStore, windowDataDir = saved, savedDir })
	dataDir := t.TempDir()
	windowDataDir = func() (string, error) { return dataDir, nil }

	t.Run("keyring unavailable", func(t *testing.T) {
		identityStore = func(context.Context) (store.Secrets, error) {
			return nil, errors.New("OS keyring (Secret Service) unavailable: start gnome-keyring")
		}
		var out, errb bytes.Buffer
		code := run(ctx, []string{"identity", "export", "--client-id", "https://agent.example/agent.json", "--out", t.TempDir()}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "keyring") {
			t.Fatalf("code %d, stderr %q", code, errb.String())
		}
	})

	secrets := store.NewSecrets(store.NewMemoryKV())
	identityStore = func(context.Context) (store.Secrets, error) { return secrets, nil }
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
			var out, errb bytes.Buffer
			if code := run(ctx, tt.args, &out, &errb); code != 2 {
				t.Fatalf("code = %d, want 2 (stderr %q)", code, errb.String())
			}
		})
	}

	t.Run("export", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "publish")
		var out, errb bytes.Buffer
		code := run(ctx, []string{"identity", "export", "--client-id", "https://agent.example/poppy/agent.json", "--out", dir, "--name", "My Agent"}, &out, &errb)
		if code != 0 {
			t.Fatalf("code %d, stderr %q", code, errb.String())
		}
		var meta map[string]any
		raw, _ := os.ReadFile(filepath.Join(dir, "agent.json"))
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		if meta["client_id"] != "https://agent.example/poppy/agent.json" || meta["client_name"] != "My Agent" || meta["jwks_uri"] != "https://agent.example/poppy/jwks.json" {
			t.Fatalf("agent.json = %s", raw)
		}
		jwks, _ := os.ReadFile(filepath.Join(dir, "jwks.json"))
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal(jwks, &set); err != nil || len(set.Keys) != 1 || set.Keys[0]["d"] != nil {
			t.Fatalf("jwks.json = %s", jwks)
		}
		// The exported key is the stored root key: a second export publishes the same kid.
		dir2 := filepath.Join(t.TempDir(), "again")
		if code := run(ctx, []string{"identity", "export", "--client-id", "https://agent.example/poppy/agent.json", "--out", dir2}, &out, &errb); code != 0 {
			t.Fatal(errb.String())
		}
		jwks2, _ := os.ReadFile(filepath.Join(dir2, "jwks.json"))
		if !bytes.Equal(jwks, jwks2) {
			t.Fatal("a second export published another key")
		}
		if !strings.Contains(out.String(), "Publish agent.json at https://agent.example/poppy/agent.json") {
			t.Fatalf("stdout = %q", out.String())
		}
	})

	// The export records the client_id where the window reads it (openWindowEngine).
	t.Run("records the window's identity", func(t *testing.T) {
		var out, errb bytes.Buffer
		const id = "https://agent.example/me/agent.json"
		if code := run(ctx, []string{"identity", "export", "--client-id", id, "--out", t.TempDir()}, &out, &errb); code != 0 {
			t.Fatalf("code %d, stderr %q", code, errb.String())
		}
		st, err := vault.OpenState(ctx, filepath.Join(dataDir, stateFileName), vault.StateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		got, err := st.GetSetting(ctx, settingClientID)
		if err != nil || got != id {
			t.Fatalf("setting %s = %q, %v; want %q", settingClientID, got, err, id)
		}
		if !strings.Contains(out.String(), "Recorded "+id) {
			t.Fatalf("stdout does not say the identity was recorded: %q", out.String())
		}
	})
}
