//go:build windows

package benchratio

import (
	"syscall"
	"time"
)

// cpuTime is the process's user plus kernel CPU time so far (GetProcessTimes); 0 when it
// cannot be read.
func cpuTime() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(syscall.Handle(^uintptr(0)), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	// FILETIME counts 100-nanosecond intervals.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
