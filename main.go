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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Version: version, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Assets: frontendAssets(), Icon: appIcon()})
	stop()
	os.Exit(code)
}
