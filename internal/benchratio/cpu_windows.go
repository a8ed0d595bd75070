//go:build windows

package benchratio

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's user plus kernel CPU time so far.
func CPUTime(b *testing.B) time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(syscall.Handle(^uintptr(0)), &creation, &exit, &kernel, &user); err != nil {
		b.Fatalf("GetProcessTimes: %v", err)
	}
	// FILETIME counts 100-nanosecond intervals.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
