//go:build unix

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// TestResetRealKeyring runs `poppydesk reset` against the real Secret Service and a real state
// database: without --yes nothing is deleted; while a window's model socket answers it refuses;
// with --yes every keyring item and the database files are gone.
func TestResetRealKeyring(t *testing.T) {
	service := realKeyring(t)
	ctx := context.Background()
	env := keyringEnv(t, service)
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if err := paths.Create(); err != nil {
		t.Fatal(err)
	}
	socket, err := env.modelEndpoint()
	if err != nil {
		t.Fatal(err)
	}

	// What a used Poppydesk leaves: keyring items and a state database with its WAL.
	kr := vault.NewKeyring(vault.KeyringOptions{Service: service})
	for _, name := range []string{"root", "company:https://shop.example|alice"} {
		if err := kr.Set(ctx, name, []byte(`{"v":1,"secret":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(paths.Data, app.StateFile)
	st, err := vault.OpenState(ctx, db, vault.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetSetting(ctx, app.SettingClientID, "https://agent.example/agent.json"); err != nil {
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
			code, out, errs := runCLI(t, env, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Fatalf("code %d (want %d)\nstdout %s\nstderr %s", code, tc.code, out, errs)
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
