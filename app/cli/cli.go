// Package cli is the poppydesk command line: one file per subcommand, all listed in [commands].
//
// Every command gets what it works with from an [Env] that package main fills in (the
// process's streams, environment and build) and tests fill in with their own values; no command
// reads a package variable or registers itself. Commands that run Poppydesk build it with
// [app.New], the one composition the window, the model's socket and the tests share.
//
// Exit status: 0 success, 1 failure, 2 usage error. A usage error is worded one way for every
// command ([usageError]): what was wrong, then the command's usage.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/pkg/browser"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// Env is what the commands run with.
type Env struct {
	// Version is Poppydesk's version.
	Version string
	// DefaultOperator is the operator this build names for "Get started" (main's build
	// setting; "" in development builds). The window's Host gets it as
	// app.Config.DefaultOperator.
	DefaultOperator string
	// Stdin, Stdout and Stderr are the command's streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// GOOS is the operating system the folders follow ("": runtime.GOOS).
	GOOS string
	// Home is the user's home folder ("": os.UserHomeDir).
	Home string
	// Executable is this program's path ("": os.Executable), which `poppydesk mcp` starts as the
	// app and `poppydesk example-agent` starts as `poppydesk mcp`.
	Executable string
	// Assets is the built frontend embedded in desktop builds (nil otherwise).
	Assets fs.FS
	// Icon is the window's icon (PNG).
	Icon []byte
	// Args is the command line without the program name (what a second launch hands to the
	// running window).
	Args []string
	// Secrets replaces the OS keyring (tests); nil: the Secret Service.
	Secrets store.Secrets
	// OpenURL opens a URL in the user's browser (`poppydesk check --allow-actions sign-in`);
	// nil: app.OpenInBrowser. Tests answer the Company's consent page with it.
	OpenURL func(url string) error
}

func (e *Env) defaults() {
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.GOOS == "" {
		e.GOOS = runtime.GOOS
	}
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
}

// Paths are the user's Poppydesk folders (XDG on Linux), resolved without creating them.
func (e Env) Paths() (app.Paths, error) {
	home := e.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil && e.GOOS != "windows" {
			return app.Paths{}, fmt.Errorf("finding the home directory for Poppydesk's data failed: %w; set $HOME", err)
		}
		home = h
	}
	return app.ResolvePaths(app.Env{GOOS: e.GOOS, Getenv: e.Getenv, Home: home})
}

// KeyringService is the Secret Service "service" of Poppydesk's items: POPPYDESK_KEYRING_SERVICE
// when set (tests use a throwaway one), else vault.DefaultService.
func (e Env) KeyringService() string {
	if s := e.Getenv("POPPYDESK_KEYRING_SERVICE"); s != "" {
		return s
	}
	return vault.DefaultService
}

// OpenSecrets opens the secret store of the OS keyring (or Env.Secrets), with one call that
// finds out early when no Secret Service answers or it is locked.
func (e Env) OpenSecrets(ctx context.Context) (store.Secrets, error) {
	if e.Secrets != nil {
		return e.Secrets, nil
	}
	kr := vault.NewKeyring(vault.KeyringOptions{Service: e.KeyringService()})
	if _, err := kr.Names(ctx); err != nil {
		return nil, err
	}
	return store.NewSecrets(kr), nil
}

func (e Env) executable() (string, error) {
	if e.Executable != "" {
		return e.Executable, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("this program cannot find its own executable: %w", err)
	}
	return exe, nil
}

// command is one subcommand: its name, one line for `poppydesk help`, the argument synopsis,
// and a constructor of its flags and run function (fresh for each invocation, so no state
// survives between runs).
type command struct {
	name     string
	summary  string
	usage    string
	hidden   bool
	register func(fs *flag.FlagSet, env *Env) runFunc
}

// runFunc runs a command with its positional arguments (flags may come before and after them).
type runFunc func(ctx context.Context, args []string) error

// commands is the command line, in the order `poppydesk help` lists it.
func commands() []command {
	return []command{
		windowCommand(),
		demoCommand(),
		mcpCommand(),
		exampleAgentCommand(),
		discoverCommand(),
		checkCommand(),
		companyCommand(),
		identityCommand(),
		operatorCommand(),
		resetCommand(),
		versionCommand(),
		helpCommand(),
		manCommand(),
	}
}

// usageError is an error in how a command was called (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Usage errors, worded once.
func errNoArguments(args []string) error {
	return usageError{fmt.Sprintf("takes no arguments, got %q", strings.Join(args, " "))}
}
func errMissing(what string) error   { return usageError{"missing " + what} }
func errUnexpected(arg string) error { return usageError{fmt.Sprintf("unexpected argument %q", arg)} }
func errRequiredFlags(flags ...string) error {
	return usageError{strings.Join(flags, " and ") + " required"}
}
func errSubcommand(only string, args []string) error {
	if len(args) == 0 {
		return usageError{fmt.Sprintf("missing the subcommand %q", only)}
	}
	return usageError{fmt.Sprintf("unknown subcommand %q; the only one is %q", args[0], only)}
}
func errInvalid(what string, err error) error {
	return usageError{fmt.Sprintf("invalid %s: %v", what, err)}
}
func errFlagNeeds(flag, needed, why string) error {
	return usageError{fmt.Sprintf("%s needs %s (%s)", flag, needed, why)}
}

// Run runs the command line args (without the program name) and returns the exit status.
func Run(ctx context.Context, args []string, env Env) int {
	env.defaults()
	env.Args = args
	// The desktop opener (github.com/pkg/browser) writes the opener's output to these; it must
	// not reach Poppydesk's stdout, where the browser-testable bridge prints its URL.
	browser.Stdout, browser.Stderr = io.Discard, io.Discard
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelpFlag(args[0]) {
		// No subcommand: the window (flags such as --debug go to it).
		args = append([]string{"window"}, args...)
	}
	name := args[0]
	if isHelpFlag(name) {
		name = "help"
	}
	var c *command
	for _, cmd := range commands() {
		if cmd.name == name {
			c = &cmd
			break
		}
	}
	if c == nil {
		fmt.Fprintf(env.Stderr, "poppydesk: unknown subcommand %q; run `poppydesk help` to list the subcommands.\n", name)
		return 2
	}
	fs := flag.NewFlagSet("poppydesk "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := c.register(fs, &env)
	printUsage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: poppydesk %s %s\n\n%s\n", c.name, c.usage, c.summary)
		if hasFlags(fs) {
			fmt.Fprintln(w, "\nFlags:")
			fs.SetOutput(w)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	positional, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printUsage(env.Stdout)
		return 0
	}
	if err == nil {
		err = run(ctx, positional)
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "poppydesk %s: %s\n\n", c.name, ue.msg)
		printUsage(env.Stderr)
		return 2
	default:
		fmt.Fprintf(env.Stderr, "poppydesk %s: %v\n", c.name, err)
		return 1
	}
}

func isHelpFlag(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

// parseInterleaved parses flags that may come before, between and after positional arguments
// ("discover shop.example --dev-ca ca.pem"). "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{strings.TrimPrefix(err.Error(), "flag provided but not defined: ")}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func versionCommand() command {
	return command{name: "version", summary: "Print the version.", usage: "",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return errNoArguments(args)
				}
				fmt.Fprintf(env.Stdout, "poppydesk %s (Personal Agent Protocol 0.4, Operations extension v2)\n", env.Version)
				return nil
			}
		}}
}

func helpCommand() command {
	return command{name: "help", summary: "List the subcommands.", usage: "",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			return func(ctx context.Context, args []string) error {
				w := env.Stdout
				fmt.Fprintln(w, "Poppydesk — a desktop Personal Agent host for the Personal Agent Protocol 0.4.")
				fmt.Fprintln(w, "\nUsage: poppydesk [SUBCOMMAND] [FLAGS] [ARGS]\n\nWith no subcommand, poppydesk opens its window.\n\nSubcommands:")
				for _, c := range commands() {
					if !c.hidden {
						fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
					}
				}
				fmt.Fprintln(w, "\nRun `poppydesk SUBCOMMAND --help` for a subcommand's flags.")
				return nil
			}
		}}
}
