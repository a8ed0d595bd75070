//go:build unix

package benchratio

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time so far: user and system, every thread (getrusage(2)); 0
// when it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
