package main

// The example-agent subcommand: runs modelapi.ExampleAgent, a scripted agent (no LLM) that uses
// ONLY Poppydesk's model interface, as any MCP client would, to walk the jacket exchange of the
// spec at the reference Company, over `poppydesk mcp` (or --socket). It shows what a model sees,
// and that it can ask but never approve.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

func init() {
	var (
		company, socket string
		maxWait         time.Duration
	)
	register(&command{
		name:    "example-agent",
		summary: "Run a scripted agent (no LLM) that asks the reference Company for the jacket exchange through Poppydesk's model interface; you decide in the window.",
		usage:   "--company DOMAIN [--socket PATH] [--wait 5m]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&company, "company", "", "the Company's domain; for `poppydesk demo`, the reference Company's shop.localhost:PORT shown in the window")
			fs.StringVar(&socket, "socket", "", "connect to the app's model socket directly instead of launching `poppydesk mcp`")
			fs.DurationVar(&maxWait, "wait", 5*time.Minute, "how long to wait for your decision in the window")
		},
		run: func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			if len(args) > 0 {
				return usageError{fmt.Sprintf("takes no arguments, got %q", args)}
			}
			if company == "" {
				return usageError{"give the Company with --company DOMAIN; with `poppydesk demo` running, that is the reference Company's shop.localhost:PORT shown in the window's status line"}
			}
			var t mcp.Transport
			if socket != "" {
				conn, err := modelapi.Dial(ctx, socket)
				if err != nil {
					return fmt.Errorf("no Poppydesk app answers at %s: %w; start Poppydesk first", socket, err)
				}
				t = &mcp.IOTransport{Reader: conn, Writer: conn}
			} else {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding this program to launch `poppydesk mcp`: %w", err)
				}
				cmd := exec.CommandContext(ctx, exe, "mcp")
				cmd.Stderr = stderr
				t = &mcp.CommandTransport{Command: cmd}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "poppydesk-example-agent", Version: version}, nil)
			cs, err := c.Connect(ctx, t, nil)
			if err != nil {
				return fmt.Errorf("connecting to Poppydesk's model interface failed: %w", err)
			}
			defer cs.Close()
			return modelapi.ExampleAgent(ctx, cs, company, maxWait, stdout)
		},
	})
}
