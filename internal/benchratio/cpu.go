package benchratio

import (
	"testing"
)

// RunCPU is Run measured in CPU time instead of wall time: the process's user and system time
// (getrusage on Unix, GetProcessTimes on Windows) around each operation, so that waiting for a
// core other processes hold does not count. It reports the subject's CPU time per operation as
// cpu-ns/op, the baseline's as baseline-cpu-ns/op, their ratio as x-baseline, and the
// subject's operations per CPU-second as ops/cpu-s (and the baseline's as baseline-ops/cpu-s).
// Operations run one at a time, so the process's CPU time is theirs (plus the runtime's own).
func RunCPU(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	b.Run(subject+"/vs="+baseline, func(b *testing.B) {
		cs, cb := alternate(b, subjectOp, baselineOp, CPUTime)
		n := float64(b.N)
		b.ReportMetric(float64(cs.Nanoseconds())/n, "cpu-ns/op")
		b.ReportMetric(float64(cb.Nanoseconds())/n, "baseline-cpu-ns/op")
		if cs > 0 {
			b.ReportMetric(n/cs.Seconds(), "ops/cpu-s")
		}
		if cb > 0 {
			b.ReportMetric(n/cb.Seconds(), "baseline-ops/cpu-s")
			b.ReportMetric(float64(cs)/float64(cb), "x-baseline")
		}
	})
}
