//go:build production

package cli

import (
	"context"
	"errors"
	"flag"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// Release builds have no browser-testable bridge and no --e2e-listen flag.
func bridgeFlags(*flag.FlagSet, *windowOptions) {}

func serveBridge(context.Context, *Env, *app.Host, *fronts.Services, *windowOptions) error {
	return errors.New("this release build has no browser-testable mode")
}
