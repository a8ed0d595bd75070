//go:build !bindings

package cli

// generatingBindings is true only while Wails generates the frontend bindings (bindings.go).
const generatingBindings = false
