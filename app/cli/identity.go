package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

func identityCommand() command {
	return command{name: "identity", summary: "Export the Personal Agent's client metadata document and public keys for publication (spec 4.1).",
		usage: "export --client-id URL --out DIR [--name NAME] [--logo-uri URL]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			clientID := fs.String("client-id", "", "HTTPS `URL` where agent.json will be published, e.g. https://agent.example/agent.json")
			out := fs.String("out", "", "`folder` to write agent.json and jwks.json into")
			name := fs.String("name", "Poppydesk", "the `name` shown to Companies (client_name)")
			logo := fs.String("logo-uri", "", "HTTPS `URL` of the logo (default: logo.png next to agent.json)")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) == 0 || args[0] != "export":
					return errSubcommand("export", args)
				case len(args) > 1:
					return errUnexpected(args[1])
				case *clientID == "" || *out == "":
					return errRequiredFlags("--client-id", "--out")
				}
				return exportIdentity(ctx, env, identity.Config{ClientID: *clientID, ClientName: *name, LogoURI: *logo}, *out)
			}
		}}
}

func exportIdentity(ctx context.Context, env *Env, cfg identity.Config, out string) error {
	secrets, err := env.OpenSecrets(ctx)
	if err != nil {
		return err
	}
	agent, err := identity.New(cfg, identity.NewLocalOperator(secrets, nil), nil)
	if err != nil {
		return errInvalid("--client-id, --name or --logo-uri", err)
	}
	files, err := agent.Export(ctx, out)
	if err != nil {
		return err
	}
	m := agent.Metadata()
	for _, f := range files {
		fmt.Fprintf(env.Stdout, "wrote %s\n", f)
	}
	fmt.Fprintf(env.Stdout, "Publish agent.json at %s and jwks.json at %s (HTTPS, no redirects, Content-Type: application/json).\n", m.ClientID, m.JWKSURI)
	if len(files) == 3 {
		fmt.Fprintf(env.Stdout, "Publish logo.png at %s.\n", m.LogoURI)
	}
	path, err := recordClientID(ctx, env, m.ClientID)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Recorded %s as Poppydesk's identity in %s; the window signs its requests with it once the files are published (restart an open window).\n", m.ClientID, path)
	return nil
}

// recordClientID stores the exported client_id as the window's identity (app.SettingClientID
// in the data folder's state database), so after publishing the files the window signs its
// requests with this identity.
func recordClientID(ctx context.Context, env *Env, clientID string) (string, error) {
	paths, err := env.Paths()
	if err == nil {
		err = paths.Create()
	}
	if err != nil {
		return "", fmt.Errorf("finding Poppydesk's data folder to record the client_id failed: %w", err)
	}
	path := filepath.Join(paths.Data, app.StateFile)
	st, err := vault.OpenState(ctx, path, vault.StateOptions{})
	if err != nil {
		return "", fmt.Errorf("opening the state database %s to record the client_id failed: %w; check the folder's permissions (or close a Poppydesk window that holds it)", path, err)
	}
	defer st.Close()
	if err := st.SetSetting(ctx, app.SettingClientID, clientID); err != nil {
		return "", fmt.Errorf("recording the client_id in %s failed: %w", path, err)
	}
	return path, nil
}
