//go:build !unix && !windows

package benchratio

import "time"

// cpuTime is not read here: RunCPU compares wall time.
func cpuTime() time.Duration { return 0 }
