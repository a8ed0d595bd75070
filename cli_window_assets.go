//go:build desktop || dev

package main

import (
	"embed"
	"io/fs"
)

// The built frontend. `wails build` (make build) runs `npm run build` in frontend/ first; a
// desktop build without frontend/dist fails here with "pattern all:frontend/dist: no matching
// files found".
//
//go:embed all:frontend/dist
var embeddedFrontend embed.FS

func init() {
	sub, err := fs.Sub(embeddedFrontend, "frontend/dist")
	if err != nil {
		panic("poppydesk: the embedded frontend is unreadable: " + err.Error())
	}
	frontendAssets = sub
}
