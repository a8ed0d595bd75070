//go:build !desktop && !dev

package main

import "io/fs"

// Builds without the desktop window embed no frontend; `--e2e-listen` serves frontend/dist.
func frontendAssets() fs.FS { return nil }

func appIcon() []byte { return nil }
