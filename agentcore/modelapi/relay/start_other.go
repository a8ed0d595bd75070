//go:build !unix && !windows

package relay

import "os/exec"

// canShowWindow: no window is built for this system; starting it reports why.
func canShowWindow(func(string) string) error { return nil }

func detach(*exec.Cmd) {}
