package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/poppydesk/poppydesk/agentcore/identity"
)

// identityStore opens the secret store that holds the root key (spec 4.1, 10.7): the OS keyring
// through the vault (cli_vault.go). Tests replace it.
var identityStore = openSecrets

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
			return nil
		},
	})
}
