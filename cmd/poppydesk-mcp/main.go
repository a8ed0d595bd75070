// Command poppydesk-mcp is the stdio MCP server that MCP clients start to reach Poppydesk: the
// relay of agentcore/modelapi/relay in a program of its own, which links nothing else, so that a
// client starts it about as fast as any small Go program (`poppydesk mcp` runs the same relay
// from the full program, which loads much more, GTK and WebKit in desktop builds). When
// Poppydesk is not running it starts the `poppydesk` program installed beside it.
// `poppydesk mcp setup CLIENT` writes a client entry that starts this program.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/relay"
)

// version is set at build time with -ldflags "-X main.version=...", as poppydesk's is.
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	o := relay.Options{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	fs := flag.NewFlagSet("poppydesk-mcp", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: poppydesk-mcp [--socket PATH] [--no-start] [--start-wait DURATION] | --version\n\n"+
			"Poppydesk's model interface (MCP) on stdio, for an MCP client: it relays to the running Poppydesk,\n"+
			"and starts Poppydesk when it is not running. `poppydesk mcp setup CLIENT` adds it to a client.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	o.Flags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Printf("poppydesk-mcp %s\n", version)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "poppydesk-mcp: unexpected argument %q; this program takes only flags\n", fs.Arg(0))
		return 2
	}
	if app, err := sibling("poppydesk"); err == nil {
		o.App = app
	}
	if err := relay.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "poppydesk-mcp:", err)
		return 1
	}
	return 0
}

// sibling is the program name installed in this program's folder.
func sibling(name string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(filepath.Dir(exe), name), nil
}
