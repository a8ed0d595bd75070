package cli

// `poppydesk mcp` is a stdio MCP server for MCP clients: the relay of agentcore/modelapi/relay,
// which passes the client's messages to the running app's model interface (a Unix socket, or a
// named pipe on Windows, where agentcore/modelapi/endpoint says) and starts the app (this
// program, as the window) when nothing answers. The app, not this process, holds the engine:
// this process never sees a key, token or approval. The poppydesk-mcp program
// (cmd/poppydesk-mcp) runs the same relay without loading the rest of Poppydesk, and is what
// `poppydesk mcp setup CLIENT` (mcp_setup.go) writes into a client's configuration when it is
// installed beside this program.

import (
	"context"
	"flag"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
	"github.com/poppydesk/poppydesk/agentcore/modelapi/relay"
)

// CodeNotRunning is the JSON-RPC error code of the relay's answer when no app can serve the
// client (relay.CodeUnavailable).
const CodeNotRunning = relay.CodeUnavailable

func mcpCommand() command {
	return command{name: "mcp", summary: "Serve Poppydesk's model interface (MCP) on stdio for an MCP client, relaying to the running app (started if needed); `mcp setup CLIENT` adds Poppydesk to a client's configuration.",
		usage: "[--socket PATH] [--no-start] [--start-wait DURATION]\n" +
			"       poppydesk mcp setup CLIENT [--yes] [--command PATH] [--config FILE]   (CLIENT: " + mcpClientNames() + ")\n" +
			"       poppydesk mcp setup --list",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			var o relay.Options
			o.Flags(fs)
			var setup mcpSetupOptions
			fs.BoolVar(&setup.yes, "yes", false, "setup: write the change without asking")
			fs.BoolVar(&setup.list, "list", false, "setup: list the clients and their configuration files on each system")
			fs.StringVar(&setup.command, "command", "", "setup: the absolute `path` of the poppydesk program the client starts (default: this program)")
			fs.StringVar(&setup.config, "config", "", "setup: change this `file` instead of the client's default one (same format)")
			return func(ctx context.Context, args []string) error {
				isSetup := len(args) > 0 && args[0] == "setup"
				if err := misplacedMCPFlag(fs, isSetup); err != nil {
					return err
				}
				switch {
				case isSetup:
					return runMCPSetup(ctx, env, setup, args[1:])
				case len(args) > 0:
					return usageError{fmt.Sprintf("unexpected argument %q; the only mcp subcommand is `setup`", args[0])}
				}
				return runRelay(ctx, env, o)
			}
		}}
}

// misplacedMCPFlag refuses a relay flag given to `mcp setup`, and a setup flag without it.
func misplacedMCPFlag(fs *flag.FlagSet, isSetup bool) error {
	relayFlags := map[string]bool{"socket": true, "no-start": true, "start-wait": true}
	var misplaced error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case misplaced != nil || relayFlags[f.Name] != isSetup:
		case isSetup:
			misplaced = usageError{fmt.Sprintf("--%s is not a flag of `poppydesk mcp setup`", f.Name)}
		default:
			misplaced = usageError{fmt.Sprintf("--%s goes with `poppydesk mcp setup`", f.Name)}
		}
	})
	return misplaced
}

// runRelay relays the command's stdio to the app, starting this program as the window when
// nothing answers.
func runRelay(ctx context.Context, env *Env, o relay.Options) error {
	if o.Endpoint == "" {
		home, err := env.home()
		if err != nil {
			return err
		}
		o.Home = home
	}
	if exe, err := env.executable(); err == nil {
		o.App = exe
	}
	o.Getenv, o.Stdin, o.Stdout, o.Stderr = env.Getenv, env.Stdin, env.Stdout, env.Stderr
	return relay.Run(ctx, o)
}

// modelEndpoint is where the app serves its model interface and the relay looks for it: the
// default endpoint for the user's home folder.
func (e Env) modelEndpoint() (string, error) {
	home, err := e.home()
	if err != nil {
		return "", err
	}
	return endpoint.Default(home)
}

// home is the home folder the model endpoint is keyed by: Env.Home, else endpoint.Home.
func (e Env) home() (string, error) {
	if e.Home != "" {
		return e.Home, nil
	}
	return endpoint.Home(e.Getenv)
}
