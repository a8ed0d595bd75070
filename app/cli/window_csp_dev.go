//go:build dev

package cli

import (
	"net/http"

	"github.com/poppydesk/poppydesk/app/csp"
)

// windowCSP: under `wails dev` the page comes from the Vite dev server, which injects CSS as
// <style> elements; inline styles are allowed there only. Scripts keep script-src 'self'.
func windowCSP(next http.Handler) http.Handler { return csp.DevMiddleware(next) }
