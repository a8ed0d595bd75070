package relay

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// canShowWindow: a Windows session always has a desktop for the window.
func canShowWindow(func(string) string) error { return nil }

// detach starts cmd without the relay's console and in a process group of its own: it outlives
// the relay and the client.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP}
}
