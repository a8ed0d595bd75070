// Command poppydesk is the Poppydesk desktop Personal Agent host (Personal Agent Protocol draft
// 0.4, Operations extension v2).
//
// With no subcommand it opens the window. Subcommands are registered by the cli_*.go files of this
// package through [register]; `poppydesk help` lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// command is one subcommand of the poppydesk binary.
type command struct {
	name    string
	summary string // one line for `poppydesk help`
	usage   string // argument synopsis, e.g. "DOMAIN [--dev-ca FILE]"
	// flags declares the subcommand's flags on fs; run is called with the remaining arguments.
	flags func(fs *flag.FlagSet)
	run   func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("poppydesk: duplicate subcommand " + c.name)
	}
	commands[c.name] = c
}

// usageError marks an error caused by how the command was called (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the process exit code: 0 success, 1 failure,
// 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" && args[0] != "-help" {
		// No subcommand: the desktop window (flags such as --e2e-listen go to it).
		args = append([]string{"window"}, args...)
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "poppydesk: unknown subcommand %q. Run `poppydesk help` to list the subcommands.\n", name)
		return 2
	}
	fs := flag.NewFlagSet("poppydesk "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: poppydesk %s %s\n\n%s\n", c.name, c.usage, c.summary)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	if c.flags != nil {
		c.flags(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := c.run(ctx, fs, fs.Args(), stdout, stderr); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "poppydesk %s: %s\n", c.name, ue.msg)
			fs.Usage()
			return 2
		}
		fmt.Fprintf(stderr, "poppydesk %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func init() {
	register(&command{
		name:    "help",
		summary: "List the subcommands.",
		run: func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			fmt.Fprintln(stdout, "Poppydesk — a desktop Personal Agent host for the Personal Agent Protocol 0.4.")
			fmt.Fprintln(stdout, "\nUsage: poppydesk [SUBCOMMAND] [FLAGS] [ARGS]\n\nWith no subcommand, poppydesk opens its window.\n\nSubcommands:")
			names := make([]string, 0, len(commands))
			for n := range commands {
				if n != "window" {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(stdout, "  %-10s %s\n", n, commands[n].summary)
			}
			fmt.Fprintln(stdout, "\nRun `poppydesk SUBCOMMAND --help` for a subcommand's flags.")
			return nil
		},
	})
	register(&command{
		name:    "version",
		summary: "Print the version.",
		run: func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			if len(args) > 0 {
				return usageError{"takes no arguments"}
			}
			fmt.Fprintf(stdout, "poppydesk %s (Personal Agent Protocol 0.4, Operations extension v2)\n", version)
			return nil
		},
	})
}
