package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// identityStore opens the secret store that holds the root key (spec 4.1, 10.7): the OS keyring
// through the vault (cli_vault.go). Tests replace it.
var identityStore = openSecrets

// windowDataDir returns the data directory the window uses (app.ResolvePaths over the process
// environment), creating it. Tests point it at a temporary folder.
var windowDataDir = func() (string, error) {
	env, err := app.OSEnv(runtime.GOOS)
	if err != nil {
		return "", err
	}
	p, err := app.ResolvePaths(env)
	if err != nil {
		return "", err
	}
	if err := p.Create(); err != nil {
		return "", err
	}
	return p.Data, nil
}

// windowDataDirNoCreate is the window's data directory, without creating anything.
func windowDataDirNoCreate() (string, error) {
	env, err := app.OSEnv(runtime.GOOS)
	if err != nil {
		return "", err
	}
	p, err := app.ResolvePaths(env)
	if err != nil {
		return "", err
	}
	return p.Data, nil
}

// recordClientID stores the exported client_id as the window's identity (the state setting
// settingClientID in the data directory's state database, the one cli_window_approvals.go
// reads), so after publishing the files the window signs its requests with this identity.
func recordClientID(ctx context.Context, clientID string) (string, error) {
	dir, err := windowDataDir()
	if err != nil {
		return "", fmt.Errorf("finding Poppydesk's data folder to record the client_id failed: %w", err)
	}
	path := filepath.Join(dir, stateFileName)
	st, err := vault.OpenState(ctx, path, vault.StateOptions{})
	if err != nil {
		return "", fmt.Errorf("opening the state database %s to record the client_id failed: %w; check the folder's permissions (or close a Poppydesk window that holds it)", path, err)
	}
	defer st.Close()
	if err := st.SetSetting(ctx, settingClientID, clientID); err != nil {
		return "", fmt.Errorf("recording the client_id in %s failed: %w", path, err)
	}
	return path, nil
}

func init() {
	var clientID, out, name, logo string
	register(&command{
		name:    "identity",
		summary: "Export the Personal Agent's client metadata document and public keys for publication (spec 4.1).",
		usage:   "export --client-id URL --out DIR [--name NAME] [--logo-uri URL]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&clientID, "client-id", "", "HTTPS URL where agent.json will be published, e.g. https://agent.example/agent.json")
			fs.StringVar(&out, "out", "", "folder to write agent.json and jwks.json into")
			fs.StringVar(&name, "name", "Poppydesk", "client_name shown to Companies")
			fs.StringVar(&logo, "logo-uri", "", "HTTPS URL of the logo (default: logo.png next to agent.json)")
		},
		run: func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			if len(args) == 0 || args[0] != "export" {
				return usageError{"the only identity subcommand is `export`"}
			}
			// Flags may follow the word export: parse them again.
			if err := fs.Parse(args[1:]); err != nil {
				return usageError{err.Error()}
			}
			if fs.NArg() > 0 {
				return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
			}
			if clientID == "" || out == "" {
				return usageError{"--client-id and --out are required"}
			}
			secrets, err := identityStore(ctx)
			if err != nil {
				return err
			}
			agent, err := identity.New(identity.Config{ClientID: clientID, ClientName: name, LogoURI: logo}, identity.NewLocalOperator(secrets, nil), nil)
			if err != nil {
				return usageError{err.Error()}
			}
			files, err := agent.Export(ctx, out)
			if err != nil {
				return err
			}
			m := agent.Metadata()
			for _, f := range files {
				fmt.Fprintf(stdout, "wrote %s\n", f)
			}
			fmt.Fprintf(stdout, "Publish agent.json at %s and jwks.json at %s (HTTPS, no redirects, Content-Type: application/json).\n", m.ClientID, m.JWKSURI)
			if len(files) == 3 {
				fmt.Fprintf(stdout, "Publish logo.png at %s.\n", m.LogoURI)
			}
			path, err := recordClientID(ctx, m.ClientID)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Recorded %s as Poppydesk's identity in %s; the window signs its requests with it once the files are published (restart an open window).\n", m.ClientID, path)
			return nil
		},
	})
}
