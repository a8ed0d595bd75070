package main

// The window subcommand (run when poppydesk gets no subcommand) and the demo subcommand.
//
// Build tags decide what the binary can do:
//
//   - desktop (added by `wails build`, i.e. `make build`) or dev (added by `wails dev`): the
//     Wails window and the embedded frontend (cli_window_desktop.go, cli_window_assets.go;
//     cli_window_dev.go relaxes style-src for the Vite dev server under dev only).
//   - bindings (added by Wails while it generates frontend/wailsjs): the Wails app without
//     assets, so the binding generator can run.
//   - !production (every build except `wails build`'s release build): the --e2e-listen flag
//     and the browser-testable bridge (cli_window_e2e.go). Release binaries do not contain it.
//
// A plain `go build` therefore has no window: `poppydesk` then says how to build one.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// DemoInfo describes the reference Company that `poppydesk demo` runs.
type DemoInfo struct {
	// Name is the Company's display name.
	Name string
	// Identifier is the Company identifier the demo uses, e.g. https://shop.localhost:8443.
	Identifier string
}

// startDemoCompany starts the reference Company (agentcore/poppytest) for `poppydesk demo` and
// returns a func that stops it. The coordinator wires it once the reference Company exists;
// while it is nil, demo opens the window with empty sections and says so in the status line.
var startDemoCompany func(ctx context.Context) (info DemoInfo, stop func(), err error)

// openWindow runs the Wails window until it is closed or ctx ends. It is nil in binaries built
// without the desktop tag.
var openWindow func(ctx context.Context, rt *windowRuntime) error

// frontendAssets is the built frontend (frontend/dist) embedded by desktop builds; nil otherwise.
var frontendAssets fs.FS

// bindingsBuild is true while Wails generates the frontend bindings: nothing is written to disk.
var bindingsBuild bool

// e2eFlags and serveE2E exist only in !production builds (cli_window_e2e.go).
var (
	e2eFlags func(fs *flag.FlagSet, o *windowOptions)
	serveE2E func(ctx context.Context, rt *windowRuntime, o *windowOptions, stdout io.Writer) error
)

// errNoWindow is what a binary built without the desktop tag says when asked for the window.
var errNoWindow = errors.New("this binary was built without the desktop window; build it with `make build` (which runs `wails build -tags webkit2_41`)")

// shutdownGrace is how long shutdown waits for in-flight work.
const shutdownGrace = 5 * time.Second

type windowOptions struct {
	demo      bool
	e2eListen string
	e2eDist   string
	debug     bool
}

// windowRuntime is what the window (or the browser-testable bridge) runs with.
type windowRuntime struct {
	paths     app.Paths
	log       *slog.Logger
	lifecycle *app.Lifecycle
	relay     *app.Relay
	status    *app.StatusLine
	shell     *app.Shell
	closeLog  func() error
	// services are the structs bound to the window (Wails) and to the browser-testable bridge:
	// the shell first, then whatever the runtime hooks add.
	services []any
	// demoCompany is set in demo mode when the reference Company runs.
	demoCompany *DemoInfo
}

// runtimeHooks run at the end of prepareRuntime, in registration order (cli_window_*.go files
// register them from init). A hook wires one area of the engine into the window: it may append
// services to rt.services and register cleanups with rt.lifecycle. An error stops the start.
// While Wails generates the frontend bindings (bindingsBuild), a hook must only append its
// service structs (zero values are fine) and start nothing.
var runtimeHooks []func(ctx context.Context, rt *windowRuntime, o *windowOptions) error

func init() {
	for _, demo := range []bool{false, true} {
		c := &command{name: "window", summary: "Open the Poppydesk window (the default when no subcommand is given).", usage: "[FLAGS]"}
		if demo {
			c = &command{name: "demo", summary: "Open the window connected to the reference Company (a local demo).", usage: "[FLAGS]"}
		}
		o := &windowOptions{demo: demo}
		c.flags = func(fs *flag.FlagSet) {
			fs.BoolVar(&o.debug, "debug", false, "write debug-level entries to the log file")
			if e2eFlags != nil {
				e2eFlags(fs, o)
			}
		}
		c.run = func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			if len(args) > 0 {
				return usageError{fmt.Sprintf("takes no arguments, got %q", args)}
			}
			return runWindow(ctx, o, stdout)
		}
		register(c)
	}
}

func runWindow(ctx context.Context, o *windowOptions, stdout io.Writer) error {
	if o.e2eListen == "" && openWindow == nil {
		return errNoWindow
	}
	rt, err := prepareRuntime(ctx, o)
	if err != nil {
		return err
	}
	defer rt.closeLog()
	defer func() {
		if err := rt.lifecycle.ShutdownWithin(shutdownGrace); err != nil {
			rt.log.Warn("shutdown was not clean", "err", err)
		}
	}()
	if o.e2eListen != "" {
		return serveE2E(ctx, rt, o, stdout)
	}
	return openWindow(ctx, rt)
}

// prepareRuntime resolves the directories, opens the log and builds the services.
func prepareRuntime(ctx context.Context, o *windowOptions) (*windowRuntime, error) {
	rt := &windowRuntime{relay: &app.Relay{}, closeLog: func() error { return nil }}
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	if bindingsBuild {
		rt.log = slog.New(slog.DiscardHandler)
	} else {
		env, err := app.OSEnv(runtime.GOOS)
		if err != nil {
			return nil, err
		}
		if rt.paths, err = app.ResolvePaths(env); err != nil {
			return nil, err
		}
		if err := rt.paths.Create(); err != nil {
			return nil, err
		}
		lf, err := app.OpenRotatingFile(rt.paths.LogFile(), app.DefaultLogMaxBytes, app.DefaultLogKeep)
		if err != nil {
			return nil, err
		}
		rt.closeLog = lf.Close
		rt.log = app.NewLogger(lf, level)
	}
	rt.lifecycle = app.NewLifecycle(ctx, rt.log)
	rt.status = app.NewStatusLine(rt.relay, "")
	cfg := app.ShellConfig{Version: version, Paths: rt.paths, Emitter: rt.relay, Log: rt.log}
	if o.demo {
		if startDemoCompany == nil {
			rt.status.Set("Demo: the reference Company is not available in this build, so every section is empty.")
			rt.log.Warn("demo requested but the reference Company is not wired into this build")
		} else {
			info, stop, err := startDemoCompany(rt.lifecycle.Context())
			if err != nil {
				return nil, fmt.Errorf("starting the reference Company for the demo failed: %w", err)
			}
			go func() { <-rt.lifecycle.Context().Done(); stop() }()
			rt.demoCompany = &info
			cfg.Demo = info.Name + " (" + info.Identifier + ")"
			rt.status.Set("Demo: connected to the reference Company " + info.Name + ".")
			rt.log.Info("demo reference Company started", "identifier", info.Identifier)
		}
	}
	rt.shell = app.NewShell(cfg, rt.status)
	rt.services = []any{rt.shell}
	for _, hook := range runtimeHooks {
		if err := hook(ctx, rt, o); err != nil {
			return nil, err
		}
	}
	rt.log.Info("poppydesk starting", "version", version, "data", rt.paths.Data, "demo", o.demo)
	return rt, nil
}
