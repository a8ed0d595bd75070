package cli

// `poppydesk example-agent` runs modelapi.ExampleAgent, a scripted agent (no LLM) that uses ONLY
// Poppydesk's model interface, as any MCP client would, to walk the jacket exchange of the spec
// at the reference Company, over `poppydesk mcp` (or --socket). It shows what a model sees, and
// that it can ask but never approve.

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

func exampleAgentCommand() command {
	return command{name: "example-agent", summary: "Run a scripted agent (no LLM) that asks the reference Company for the jacket exchange through Poppydesk's model interface; you decide in the window.",
		usage: "--company DOMAIN [--socket PATH] [--wait DURATION]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			company := fs.String("company", "", "the Company's `domain`; for `poppydesk demo`, the reference Company's shop.localhost:PORT shown in the window")
			socket := fs.String("socket", "", "connect to the app's model socket `path` directly instead of launching `poppydesk mcp`")
			maxWait := fs.Duration("wait", 5*time.Minute, "how long to wait for your decision in the window, a `time` such as 90s or 5m")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) > 0:
					return errNoArguments(args)
				case *company == "":
					return errRequiredFlags("--company")
				}
				var t mcp.Transport
				if *socket != "" {
					conn, err := modelapi.Dial(ctx, *socket)
					if err != nil {
						return fmt.Errorf("no Poppydesk app answers at %s: %w; start Poppydesk first", *socket, err)
					}
					t = &mcp.IOTransport{Reader: conn, Writer: conn}
				} else {
					exe, err := env.executable()
					if err != nil {
						return err
					}
					cmd := exec.CommandContext(ctx, exe, "mcp")
					cmd.Stderr = env.Stderr
					t = &mcp.CommandTransport{Command: cmd}
				}
				c := mcp.NewClient(&mcp.Implementation{Name: "poppydesk-example-agent", Version: env.Version}, nil)
				cs, err := c.Connect(ctx, t, nil)
				if err != nil {
					return fmt.Errorf("connecting to Poppydesk's model interface failed: %w", err)
				}
				defer cs.Close()
				return modelapi.ExampleAgent(ctx, cs, *company, *maxWait, env.Stdout)
			}
		}}
}
