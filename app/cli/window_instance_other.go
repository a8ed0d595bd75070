//go:build !linux || !(desktop || dev)

package cli

import "time"

// handToRunningWindow: outside Linux desktop builds, Wails's own single-instance lock (or none)
// decides; nothing is handed over before the Host is built.
func handToRunningWindow(func(string) string, []string) bool { return false }

// waitInstanceFree: nothing to wait for where no lock is taken before the Host is built.
func waitInstanceFree(func(string) string, time.Duration) {}
