//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/vault"
)

// TestResetRealKeyring runs `poppydesk reset` against the real Secret Service (run through
// scripts/with-keyring.sh) and a real state database: without --yes nothing is deleted; while a
// window's model socket answers it refuses; with --yes every keyring item and the database
// files are gone.
func TestResetRealKeyring(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but there is no D-Bus session: run through scripts/with-keyring.sh")
		}
		t.Skip("no D-Bus session, so no Secret Service; run through scripts/with-keyring.sh")
	}
	ctx := context.Background()
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	service := "poppydesk-test-" + hex.EncodeToString(buf)
	t.Setenv("POPPYDESK_KEYRING_SERVICE", service)
	t.Cleanup(func() { _ = vault.NewKeyring(vault.KeyringOptions{Service: service}).DeleteAll(ctx) })

	dataDir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "pdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket := filepath.Join(sockDir, "run", modelapi.SocketName)
	saved := resetPaths
	resetPaths = func() (string, string, error) { return dataDir, socket, nil }
	t.Cleanup(func() { resetPaths = saved })

	// What a used Poppydesk leaves: keyring items and a state database with its WAL.
	kr := vault.NewKeyring(vault.KeyringOptions{Service: service})
	for _, name := range []string{"root", "company:https://shop.example|alice"} {
		if err := kr.Set(ctx, name, []byte(`{"v":1,"secret":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dataDir, stateFileName)
	st, err := vault.OpenState(ctx, db, vault.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetSetting(ctx, settingClientID, "https://agent.example/agent.json"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, f := range []string{db + "-wal", db + "-shm"} { // as a crash would leave them
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	remaining := func() (items []string, files []string) {
		fresh := vault.NewKeyring(vault.KeyringOptions{Service: service}) // no cache
		for _, n := range []string{"root", "company:https://shop.example|alice"} {
			if _, err := fresh.Get(ctx, n); err == nil {
				items = append(items, n)
			}
		}
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			if _, err := os.Stat(f); err == nil {
				files = append(files, f)
			}
		}
		return items, files
	}

	cases := []struct {
		name      string
		args      []string
		listening bool
		code      int
		out, err  string
		deleted   bool
	}{
		{name: "without --yes only lists", args: []string{"reset"}, code: 1, out: "Would delete " + db + "-wal", err: "nothing was deleted"},
		{name: "extra argument", args: []string{"reset", "now"}, code: 2},
		{name: "refuses while a window runs", args: []string{"reset", "--yes"}, listening: true, code: 1, err: "a Poppydesk window is running"},
		{name: "--yes deletes everything", args: []string{"reset", "--yes"}, code: 0, out: "Poppydesk is reset", deleted: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.listening {
				lctx, cancel := context.WithCancel(ctx)
				ln, err := modelapi.Listen(lctx, socket)
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						c.Close()
					}
				}()
				defer func() { cancel(); ln.Close() }()
			}
			var out, errb bytes.Buffer
			code := run(ctx, tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errb.String(), tc.err) {
				t.Fatalf("code %d (want %d)\nstdout %s\nstderr %s", code, tc.code, out.String(), errb.String())
			}
			items, files := remaining()
			if tc.deleted && (len(items) != 0 || len(files) != 0) {
				t.Fatalf("left after reset: items %v, files %v", items, files)
			}
			if !tc.deleted && (len(items) != 2 || len(files) != 3) {
				t.Fatalf("deleted although it should not: items %v, files %v", items, files)
			}
		})
	}
}
