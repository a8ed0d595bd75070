//go:build bindings

package cli

// generatingBindings is true while Wails generates the frontend bindings: the window runs over
// zero values of the bound services, and nothing is written to disk.
const generatingBindings = true
