package cli

// `poppydesk reset --yes` deletes every keyring item of Poppydesk's Secret Service service
// (vault.Keyring.DeleteAll: the root key, every Company bundle with its keys, tokens, User and
// Agent IDs, and the index) and the state database with its -wal and -shm files in the data
// folder. The log files are not secret (nothing secret is logged) and stay, so a user can still
// report what happened.
//
// Safety: without --yes it only prints what it would delete. It refuses while a Poppydesk window
// runs, because the window holds the database open and keeps secrets in its memory cache, so a
// reset under it would be undone or half-done. The check is the model endpoint
// (Env.modelEndpoint): every window serves it while it runs and removes it when it stops, and
// modelapi.Listen removes a stale one left by a crash, so "a connection is accepted" is a
// reliable sign of a running window. (The desktop single-instance lock is a D-Bus name held by
// Wails, which this process cannot query without a D-Bus client; a window whose model interface
// failed to start shows that in its Inspector, and is the one case the check cannot see.)

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

func resetCommand() command {
	return command{name: "reset", summary: "Delete everything Poppydesk keeps: every keyring item (keys, sign-ins, IDs) and the state database. Needs --yes.",
		usage: "[--yes]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			yes := fs.Bool("yes", false, "really delete; without it, only print what would be deleted")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return errNoArguments(args)
				}
				return reset(ctx, env, *yes)
			}
		}}
}

func reset(ctx context.Context, env *Env, yes bool) error {
	paths, err := env.Paths()
	if err != nil {
		return err
	}
	socket, err := env.modelEndpoint()
	if err != nil {
		return err
	}
	if windowRunning(ctx, socket) {
		return fmt.Errorf("a Poppydesk window is running (its model socket %s answers); close it first, then run `poppydesk reset --yes` again. Nothing was deleted", socket)
	}
	service := env.KeyringService()
	kr := vault.NewKeyring(vault.KeyringOptions{Service: service})
	names, err := kr.Names(ctx)
	if err != nil {
		return fmt.Errorf("reading the keyring failed, so nothing was deleted: %w", err)
	}
	db := filepath.Join(paths.Data, app.StateFile)
	var files []string
	for _, f := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
		if _, err := os.Lstat(f); err == nil {
			files = append(files, f)
		}
	}
	verb := "Would delete"
	if yes {
		verb = "Deleting"
	}
	out := env.Stdout
	fmt.Fprintf(out, "%s every item of the keyring service %q (%d listed", verb, service, len(names))
	if len(names) > 0 {
		fmt.Fprintf(out, ": %d Company sign-in bundle(s) and the identity keys", len(names))
	}
	fmt.Fprintln(out, ")")
	for _, f := range files {
		fmt.Fprintf(out, "%s %s\n", verb, f)
	}
	if len(files) == 0 {
		fmt.Fprintf(out, "No state database in %s.\n", paths.Data)
	}
	if !yes {
		return errors.New("nothing was deleted; run `poppydesk reset --yes` to delete all of the above (your published agent.json and jwks.json then name a key that no longer exists: export a new identity)")
	}
	if err := kr.DeleteAll(ctx); err != nil {
		return fmt.Errorf("deleting the keyring items failed (the state database was kept): %w", err)
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the keyring items are deleted, but deleting %s failed: %w; delete it by hand", f, err)
		}
	}
	fmt.Fprintln(out, "Poppydesk is reset: no keys, sign-ins or state are left. Logs stay in the log folder.")
	return nil
}

// windowRunning reports whether a Poppydesk window answers on its model socket.
func windowRunning(ctx context.Context, socket string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := modelapi.Dial(ctx, socket)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
