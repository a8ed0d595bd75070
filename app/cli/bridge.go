//go:build !production

package cli

// The browser-testable mode: `poppydesk window --e2e-listen 127.0.0.1:0` serves the window's
// frontend and the Host's services over HTTP for a headless browser instead of opening the
// window. This file is excluded from release builds (`wails build` adds the production tag), so
// release binaries have neither the flag nor the bridge.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/fronts"
	"github.com/poppydesk/poppydesk/app/webbridge"
)

func bridgeFlags(fs *flag.FlagSet, o *windowOptions) {
	fs.StringVar(&o.e2eListen, "e2e-listen", "", "development builds only: instead of opening the window, serve it for a browser on this `address` (127.0.0.1:PORT; port 0 picks one) and print its one-time URL")
	fs.StringVar(&o.e2eDist, "e2e-dist", "frontend/dist", "with --e2e-listen: the built frontend's `folder`, served when the binary has none embedded")
}

func serveBridge(ctx context.Context, env *Env, h *app.Host, window *fronts.Services, o *windowOptions) error {
	assets := env.Assets
	if assets == nil {
		if _, err := os.Stat(o.e2eDist + "/index.html"); err != nil {
			return fmt.Errorf("no built frontend at %s: run `npm run build` in frontend/ first, or pass --e2e-dist", o.e2eDist)
		}
		assets = os.DirFS(o.e2eDist)
	}
	srv, err := webbridge.Start(h.Context(), o.e2eListen, webbridge.Config{Assets: assets, Bind: window.Bindings(), Log: h.Logger()})
	if err != nil {
		return err
	}
	detach := window.Attach(srv)
	defer detach()
	h.Logger().Info("browser-testable bridge listening", "origin", srv.Origin())
	// The URL carries the token: it goes to stdout for the test driver, never to the log.
	fmt.Fprintf(env.Stdout, "Open %s\n", srv.URL())
	<-ctx.Done()
	if err := srv.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("stopping the bridge failed: %w", err)
	}
	return nil
}
