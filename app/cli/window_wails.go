//go:build desktop || bindings || dev

package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/logger"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"

	"github.com/poppydesk/poppydesk/app"
)

// windowAvailable is true in builds with the Wails window.
const windowAvailable = true

// singleInstanceID names Poppydesk's single-instance lock (on Linux a D-Bus name on the session
// bus): a second launch hands its arguments to the first one, which comes to the front, and
// exits.
const singleInstanceID = "org.poppydesk.Poppydesk"

func runWails(_ context.Context, env *Env, w windowRun) error {
	var wctx context.Context
	opts := &options.App{
		Title:            "Poppydesk",
		Width:            1120,
		Height:           740,
		MinWidth:         760,
		MinHeight:        480,
		BackgroundColour: &options.RGBA{R: 246, G: 246, B: 243, A: 255},
		AssetServer:      &assetserver.Options{Assets: env.Assets, Middleware: windowCSP},
		Bind:             w.bind,
		Logger:           slogWails{w.log},
		// Wails logs at this level into slogWails, which filters again by the slog level.
		LogLevel:           logger.INFO,
		LogLevelProduction: logger.WARNING,
		OnStartup: func(c context.Context) {
			wctx = c
			if w.attach != nil {
				w.attach(app.EmitterFunc(func(name string, data ...any) { wruntime.EventsEmit(c, name, data...) }))
			}
			if w.restart != nil {
				w.restart.setQuit(func() { wruntime.Quit(c) })
			}
			// SIGINT and SIGTERM need nothing here: Wails handles them itself by quitting the
			// window, which runs OnShutdown. Quitting a second time from here races GTK's
			// teardown and crashes (seen in scripts/smoke.sh).
			w.log.Info("window started")
		},
		OnDomReady: func(context.Context) { w.log.Info("window DOM ready") },
		// No OnBeforeClose: closing is never refused, and with it set Wails quits GTK from a
		// goroutine. OnShutdown runs on every way out (close button, quit, SIGINT/SIGTERM).
		OnShutdown: func(context.Context) {
			w.log.Info("window closing")
			if w.shutdown != nil {
				w.shutdown()
			}
		},
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId: singleInstanceID,
			OnSecondInstanceLaunch: func(options.SecondInstanceData) {
				if wctx == nil {
					return
				}
				w.log.Info("a second launch was redirected to this window")
				wruntime.WindowUnminimise(wctx)
				wruntime.Show(wctx)
			},
		},
		Linux: &linux.Options{ProgramName: "poppydesk", Icon: env.Icon, WebviewGpuPolicy: linux.WebviewGpuPolicyNever},
	}
	if err := wails.Run(opts); err != nil {
		return fmt.Errorf("the window failed: %w", err)
	}
	return nil
}

// slogWails sends Wails's own log lines to the application log.
type slogWails struct{ l *slog.Logger }

func (s slogWails) Print(m string)   { s.l.Info(m, "source", "wails") }
func (s slogWails) Trace(m string)   { s.l.Debug(m, "source", "wails") }
func (s slogWails) Debug(m string)   { s.l.Debug(m, "source", "wails") }
func (s slogWails) Info(m string)    { s.l.Info(m, "source", "wails") }
func (s slogWails) Warning(m string) { s.l.Warn(m, "source", "wails") }
func (s slogWails) Error(m string)   { s.l.Error(m, "source", "wails") }
func (s slogWails) Fatal(m string)   { s.l.Error(m, "source", "wails") }
