//go:build !desktop && !bindings && !dev

package cli

import "context"

// windowAvailable is false in builds without the Wails window (a plain `go build`).
const windowAvailable = false

func runWails(context.Context, *Env, windowRun) error { return errNoWindow }
