//go:build !unix

package cli

import (
	"context"
	"errors"
	"flag"
)

func mcpCommand() command {
	return command{name: "mcp", summary: "Serve Poppydesk's model interface (MCP) on stdio (Unix systems only).", usage: "",
		register: func(*flag.FlagSet, *Env) runFunc {
			return func(context.Context, []string) error {
				return errors.New("the model interface needs a Unix socket, which this system's build does not have (Windows named pipes are not implemented)")
			}
		}}
}
