//go:build bindings

package main

// Wails builds the app with the bindings tag and runs it to generate frontend/wailsjs; that run
// must not create directories or log files in the user's home.
func init() { bindingsBuild = true }
