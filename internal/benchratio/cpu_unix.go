//go:build unix

package benchratio

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's user plus system CPU time so far.
func CPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
