package cli

// The window (run when poppydesk gets no subcommand) and the demo: both build the Host
// (app.New) and show it in the Wails window, or, in development builds with --e2e-listen, serve
// the same services to a browser.
//
// Build tags decide what the binary can do:
//
//   - desktop (added by `wails build`, i.e. `make build`) or dev (added by `wails dev`): the
//     Wails window (window_wails.go) with the frontend that package main embeds.
//   - bindings (added by Wails while it generates frontend/wailsjs): the Wails app over zero
//     values of the bound services (fronts.BindingTypes), so the generator can read their types.
//   - !production (every build except `wails build`'s release build): the --e2e-listen flag
//     and the browser-testable bridge (bridge.go). Release binaries do not contain it.
//
// A plain `go build` therefore has no window: `poppydesk` then says how to build one.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// errNoWindow is what a binary built without the desktop tag says when asked for the window.
var errNoWindow = errors.New("this binary was built without the desktop window; build it with `make build` (which runs `wails build -tags webkit2_41`)")

type windowOptions struct {
	demo      bool
	debug     bool
	faults    listFlag
	e2eListen string
	e2eDist   string
	// dev is developer mode for this run (it replaces the one saved in Settings).
	dev devFlags
}

func windowCommand() command {
	return command{name: "window", summary: "Open the Poppydesk window (the default when no subcommand is given).", usage: "[FLAGS]", hidden: true,
		register: func(fs *flag.FlagSet, env *Env) runFunc { return windowFlags(fs, env, &windowOptions{}) }}
}

func demoCommand() command {
	return command{name: "demo", summary: "Open the window connected to the reference Company (a local demo).", usage: "[--fault NAME]... [FLAGS]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			o := &windowOptions{demo: true}
			fs.Var(&o.faults, "fault", "switch on the reference Company's fault `name` (repeatable): "+strings.Join(refcompany.AllFaults, ", "))
			return windowFlags(fs, env, o)
		}}
}

func windowFlags(fs *flag.FlagSet, env *Env, o *windowOptions) runFunc {
	fs.BoolVar(&o.debug, "debug", false, "write debug-level entries to the log file")
	o.dev.register(fs)
	o.dev.registerOperator(fs)
	bridgeFlags(fs, o)
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return errNoArguments(args)
		}
		if o.demo {
			if err := checkFaults(o.faults, true); err != nil {
				return err
			}
		}
		return runWindow(ctx, env, o)
	}
}

func runWindow(ctx context.Context, env *Env, o *windowOptions) error {
	if generatingBindings {
		return runWails(ctx, env, windowRun{bind: fronts.BindingTypes(), log: slog.New(slog.DiscardHandler)})
	}
	if o.e2eListen == "" && !windowAvailable {
		return errNoWindow
	}
	restarted := app.RestartTo(env.Getenv(envRestarted))
	switch {
	case o.e2eListen != "":
	case restarted != "":
		// This start follows a restart from the window: the previous window's single-instance
		// lock goes with its process, and this one must not hand itself over to it.
		waitInstanceFree(env.Getenv, instanceRelease)
	case handToRunningWindow(env.Getenv, env.Args):
		fmt.Fprintln(env.Stdout, "Poppydesk is already running; its window is now in front.")
		return nil
	}
	r := &restarter{}
	if err := runHost(ctx, env, o, restarted, r); err != nil {
		return err
	}
	if to := r.requested(); to != "" {
		return restartProgram(env, to)
	}
	return nil
}

// runHost builds the Host and shows it in the window (or serves it to a browser) until the
// window closes; a restart the window asked for is left in r.
func runHost(ctx context.Context, env *Env, o *windowOptions, restarted app.RestartTo, r *restarter) error {
	paths, err := env.Paths()
	if err != nil {
		return err
	}
	if err := paths.Create(); err != nil {
		return err
	}
	lf, err := app.OpenRotatingFile(paths.LogFile(), app.DefaultLogMaxBytes, app.DefaultLogKeep)
	if err != nil {
		return err
	}
	defer lf.Close()
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	log := app.NewLogger(lf, level)
	cfg := app.Config{Version: env.Version, Paths: paths, Logger: log, Getenv: env.Getenv, Secrets: env.Secrets,
		KeyringService: env.KeyringService(), DefaultOperator: env.DefaultOperator, Welcome: restarted == app.RestartReady}
	if o.e2eListen == "" {
		cfg.Restart = r.request
	}
	// The model interface where `poppydesk mcp` looks for it (when the home folder is unknown,
	// the Host says so in the Inspector).
	cfg.Socket, _ = env.modelEndpoint()
	if o.demo {
		cfg.Demo = &app.DemoOptions{Faults: o.faults, FromWindow: restarted == app.RestartDemo}
	}
	if dev, err := o.dev.developer(); err != nil {
		return err
	} else if dev.On() {
		cfg.Developer = dev
	}
	h, err := app.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := h.CloseWithin(app.ShutdownGrace); err != nil {
			log.Warn("shutdown was not clean", "err", err)
		}
	}()
	// The window's services over the Host: bound to the window, and the Host's events sent to it.
	window := fronts.New(h)
	if o.e2eListen != "" {
		return serveBridge(ctx, env, h, window, o)
	}
	return runWails(ctx, env, windowRun{bind: window.Bindings(), attach: window.Attach, log: log, restart: r,
		waiting: h.ApprovalsWaiting, urgency: h.SetUrgency,
		shutdown: func() {
			if err := h.CloseWithin(app.ShutdownGrace); err != nil {
				log.Warn("shutdown was not clean", "err", err)
			}
		}})
}

// windowRun is what the Wails window shows: the bound services, what sends the Host's events
// to the window, how many approvals wait (the window asks before closing while any do), where
// the window's urgency hint goes, and what closes the Host when the window closes.
type windowRun struct {
	bind     []any
	attach   func(app.Emitter) (detach func()) // nil while generating bindings
	log      *slog.Logger
	waiting  func() int
	urgency  func(func(on bool))
	shutdown func()
	// restart learns how to quit the window once it started (nil while generating bindings).
	restart *restarter
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (f *listFlag) String() string { return strings.Join(*f, ",") }

func (f *listFlag) Set(v string) error {
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			*f = append(*f, n)
		}
	}
	return nil
}

// checkFaults refuses a fault name the reference Company does not know (its Company Agent's
// included when agent is true).
func checkFaults(names []string, agent bool) error {
	known := refcompany.Faults
	if agent {
		known = refcompany.AllFaults
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return errInvalid("--fault", fmt.Errorf("the reference Company has no fault %q; its faults are: %s", n, strings.Join(known, ", ")))
		}
	}
	return nil
}
