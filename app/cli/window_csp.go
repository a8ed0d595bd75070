//go:build (desktop || bindings) && !dev

package cli

import (
	"net/http"

	"github.com/poppydesk/poppydesk/app/csp"
)

// windowCSP adds the Content-Security-Policy headers to the window's assets.
func windowCSP(next http.Handler) http.Handler { return csp.Middleware(next) }
