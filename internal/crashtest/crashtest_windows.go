package crashtest

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// Kill ends p with TerminateProcess and ExitCode.
func Kill(p *os.Process) error {
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("opening process %d to end it: %w", p.Pid, err)
	}
	defer windows.CloseHandle(h)
	return windows.TerminateProcess(h, ExitCode)
}

// Killed reports whether the process ended by Kill.
func Killed(ps *os.ProcessState) bool { return ps.ExitCode() == ExitCode }
