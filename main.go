// Command poppydesk is the Poppydesk desktop Personal Agent host (Personal Agent Protocol draft
// 0.4, Operations extension v2).
//
// With no subcommand it opens the window. The subcommands are in package app/cli, listed in one
// place; `poppydesk help` lists them. This package only hands the process and the build to it:
// the streams, the environment, and (in desktop builds) the embedded frontend and icon.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/poppydesk/poppydesk/app/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// defaultOperator is the base URL of the operator whose open enrollment "Get started" uses on the
// first run (spec 10.7), set at build time with -ldflags "-X main.defaultOperator=https://…"
// (make build DEFAULT_OPERATOR=…). Empty in development builds: the first run then says what
// each other way to start needs. Only main reads it, and hands it to the composition in app/cli.
var defaultOperator = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Version: version, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Assets: frontendAssets(), Icon: appIcon(), DefaultOperator: defaultOperator})
	stop()
	os.Exit(code)
}
