//go:build unix

package crashtest

import (
	"os"
	"syscall"
)

// Kill sends p SIGKILL.
func Kill(p *os.Process) error { return p.Signal(syscall.SIGKILL) }

// Killed reports whether the process ended by SIGKILL.
func Killed(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
