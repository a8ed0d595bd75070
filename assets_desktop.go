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

// The window icon on Linux (the same file Wails uses for the macOS and Windows bundles).
//
//go:embed build/appicon.png
var embeddedIcon []byte

func frontendAssets() fs.FS {
	sub, err := fs.Sub(embeddedFrontend, "frontend/dist")
	if err != nil {
		panic("poppydesk: the embedded frontend is unreadable: " + err.Error())
	}
	return sub
}

func appIcon() []byte { return embeddedIcon }
