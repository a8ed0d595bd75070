//go:build unix

package relay

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
)

// errNoDisplay: the window cannot open, so the app is not started (GTK would stop it at once).
var errNoDisplay = errors.New("Poppydesk is not running, and it cannot be started from here: the MCP client started this relay without a display (neither DISPLAY nor WAYLAND_DISPLAY is set; MCP clients often pass on only HOME, PATH and a few other variables), and Poppydesk's window needs one. Start Poppydesk from your desktop's menu, then try again")

// canShowWindow reports whether a window can open: on Linux and the BSDs, an X11 or Wayland
// display must be named; macOS needs none.
func canShowWindow(getenv func(string) string) error {
	if runtime.GOOS == "darwin" || getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "" {
		return nil
	}
	return errNoDisplay
}

// detach starts cmd in a session of its own: it outlives the relay and the client.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
