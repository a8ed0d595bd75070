// Package benchratio runs a benchmark's subject and its baseline in the same loop, alternately,
// timing each, and reports their ratio (b.ReportMetric, unit "x-baseline"), so that load from
// other processes on a small machine slows both alike instead of whichever ran second.
// `make bench` prints the ratios as one table (scripts/benchtable.sh).
package benchratio

import (
	"testing"
	"time"
)

// Run runs the sub-benchmark subject+"/vs="+baseline: each of its b.N iterations calls subjectOp
// and baselineOp once each (which first alternates), each doing one operation. It reports the
// subject's time as ns/op, the baseline's as baseline-ns/op, and subject/baseline as x-baseline.
func Run(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	b.Run(subject+"/vs="+baseline, func(b *testing.B) {
		start := time.Now()
		ts, tb := alternate(b, subjectOp, baselineOp, func(*testing.B) time.Duration { return time.Since(start) })
		n := float64(b.N)
		b.ReportMetric(float64(ts.Nanoseconds())/n, "ns/op")
		b.ReportMetric(float64(tb.Nanoseconds())/n, "baseline-ns/op")
		if tb > 0 {
			b.ReportMetric(float64(ts)/float64(tb), "x-baseline")
		}
	})
}

// alternate runs b.N rounds of subjectOp and baselineOp, which first alternating, and returns
// the time each took in all as clock measures it (b's timer stops at the end).
func alternate(b *testing.B, subjectOp, baselineOp func(*testing.B), clock func(*testing.B) time.Duration) (ts, tb time.Duration) {
	measure := func(op func(*testing.B), into *time.Duration) {
		t := clock(b)
		op(b)
		*into += clock(b) - t
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			measure(subjectOp, &ts)
			measure(baselineOp, &tb)
		} else {
			measure(baselineOp, &tb)
			measure(subjectOp, &ts)
		}
	}
	b.StopTimer()
	return ts, tb
}
