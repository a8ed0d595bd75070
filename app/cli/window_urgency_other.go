//go:build (desktop || bindings || dev) && !linux

package cli

// setUrgent does nothing where the window's urgency hint is not implemented (macOS, Windows):
// the desktop notification and the taskbar count still tell the user.
func setUrgent(bool) {}
