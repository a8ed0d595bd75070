//go:build desktop || bindings || dev

package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

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

func runWails(ctx context.Context, env *Env, w windowRun) error {
	var wctx context.Context
	// confirmed: the window closes without asking (the user confirmed, or SIGINT/SIGTERM ended
	// ctx); quitting: the close is under way (GTK's main loop is quit once).
	var confirmed, quitting atomic.Bool
	quit := func(c context.Context) {
		confirmed.Store(true)
		wruntime.Quit(c)
	}
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
				w.restart.setQuit(func() { quit(c) })
			}
			if w.urgency != nil {
				w.urgency(setUrgent)
			}
			wruntime.EventsOn(c, app.EventWindowCloseConfirmed, func(...any) {
				w.log.Info("the user chose to close the window while approvals wait")
				quit(c)
			})
			// SIGINT and SIGTERM (ctx) close without asking; Wails also quits on them itself,
			// and OnBeforeClose lets only the first quit through.
			context.AfterFunc(ctx, func() { quit(c) })
			w.log.Info("window started")
		},
		OnDomReady: func(context.Context) { w.log.Info("window DOM ready") },
		// Closing (the close button, the window manager, Ctrl+Q in the page, which calls the
		// runtime's Quit, a signal) comes here first, on a goroutine of Wails's own. While
		// approvals wait, the page asks the user and the window stays; otherwise the window is
		// hidden at once (nothing stays on screen while the Host shuts down) and GTK's main
		// loop is quit, once.
		OnBeforeClose: func(c context.Context) bool {
			if quitting.Load() {
				return true
			}
			if !confirmed.Load() && w.waiting != nil {
				if n := w.waiting(); n > 0 {
					w.log.Info("the window asks before closing: approvals are waiting", "waiting", n)
					wruntime.WindowShow(c)
					wruntime.EventsEmit(c, app.EventWindowCloseRequested, app.CloseRequest{Waiting: n})
					return true
				}
			}
			if !quitting.CompareAndSwap(false, true) {
				return true
			}
			wruntime.WindowHide(c)
			return false
		},
		// OnShutdown runs on every way out, after GTK's main loop has ended.
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
		Linux: &linux.Options{ProgramName: "poppydesk", Icon: windowIcon(env.Icon), WebviewGpuPolicy: linux.WebviewGpuPolicyNever},
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
