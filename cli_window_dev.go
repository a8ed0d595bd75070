//go:build dev

package main

import "github.com/poppydesk/poppydesk/app/csp"

// Under `wails dev` the page comes from the Vite dev server, which injects CSS as <style>
// elements; allow inline styles there only. Scripts keep script-src 'self'.
func init() { windowCSPMiddleware = csp.DevMiddleware }
