// Package benchratio runs a benchmark's subject and its baseline in the same loop, alternately,
// timing each, and reports their ratio (b.ReportMetric, unit "x-baseline"), so that load from
// other processes on a small machine slows both alike instead of whichever ran second.
// `make bench` prints the ratios as one table (scripts/benchtable.sh).
//
// Three things keep a ratio repeatable on a shared two-core machine:
//   - interleaving: each iteration runs both sides, in alternating order;
//   - rounds: the iterations are split into up to Rounds rounds, a ratio is taken per round and
//     the median is reported (x-baseline), so a burst of load during one round does not move
//     it; round-spread reports how far the rounds' ratios lie apart ((max-min)/median), which
//     the table uses to mark a row noisy;
//   - CPU time, for benchmarks whose both sides only compute in this process ([RunCPU]): the
//     process's CPU time (user and system, every thread: the goroutines an op starts count) is
//     what the ratio compares, which other processes' load on the cores does not inflate the
//     way it inflates wall time. A side that waits (a disk flush, a browser) is timed by the
//     wall clock ([Run]).
package benchratio

import (
	"slices"
	"testing"
	"time"
)

// Rounds is how many rounds the iterations are split into, at most (fewer when b.N is smaller).
const Rounds = 7

// minChunk is the least time one timed chunk of ops takes (chunks of a single op are longer).
const minChunk = 100 * time.Microsecond

// Run runs the sub-benchmark subject+"/vs="+baseline: each of its b.N iterations calls subjectOp
// and baselineOp once each (which first alternates), each doing one operation. It reports the
// subject's wall time as ns/op, the baseline's as baseline-ns/op, the median of the rounds'
// subject/baseline wall-time ratios as x-baseline, and the rounds' spread as round-spread.
func Run(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	run(b, subject, baseline, subjectOp, baselineOp, false)
}

// RunCPU is Run comparing the process's CPU time instead of wall time (x-baseline, with
// cpu-ns/op and baseline-cpu-ns/op, and each side's operations per CPU-second as ops/cpu-s and
// baseline-ops/cpu-s; ns/op and baseline-ns/op stay wall time), for a subject and a baseline
// that only compute in this process: the process's user and system time (getrusage on Unix,
// GetProcessTimes on Windows), so that waiting for a core other processes hold does not count.
// Where the process's CPU time cannot be read it compares wall time.
func RunCPU(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	run(b, subject, baseline, subjectOp, baselineOp, cpuTime() > 0)
}

// CPUTime is the process's CPU time so far (user and system, every thread), for a benchmark
// that times CPU itself; a system where it cannot be read fails the benchmark.
func CPUTime(b *testing.B) time.Duration {
	t := cpuTime()
	if t == 0 {
		b.Fatal("benchratio: the process's CPU time cannot be read on this system")
	}
	return t
}

// side is one side's totals in one round.
type side struct{ wall, cpu time.Duration }

func run(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B), useCPU bool) {
	b.Helper()
	b.Run(subject+"/vs="+baseline, func(b *testing.B) {
		rounds := min(b.N, Rounds)
		s, bs := make([]side, rounds), make([]side, rounds)
		// Ops of a few microseconds are timed in chunks of k, so that reading the clocks
		// (getrusage is a system call) stays a small part of what is timed.
		k := 1
		if b.N > 1 {
			t := time.Now()
			subjectOp(b)
			baselineOp(b)
			if d := time.Since(t); d < minChunk {
				k = min(int(minChunk/max(d, time.Nanosecond)), 1000)
			}
		}
		timed := func(op func(*testing.B), n int, into *side) {
			var c0 time.Duration
			if useCPU {
				c0 = cpuTime()
			}
			t := time.Now()
			for range n {
				op(b)
			}
			into.wall += time.Since(t)
			if useCPU {
				into.cpu += cpuTime() - c0
			}
		}
		b.ResetTimer()
		for i, turn := 0, 0; i < b.N; turn++ {
			n := min(k, b.N-i)
			r := i * rounds / b.N
			if turn%2 == 0 {
				timed(subjectOp, n, &s[r])
				timed(baselineOp, n, &bs[r])
			} else {
				timed(baselineOp, n, &bs[r])
				timed(subjectOp, n, &s[r])
			}
			i += n
		}
		b.StopTimer()
		var ts, tb side
		var ratios []float64
		for r := range rounds {
			ts.wall, ts.cpu, tb.wall, tb.cpu = ts.wall+s[r].wall, ts.cpu+s[r].cpu, tb.wall+bs[r].wall, tb.cpu+bs[r].cpu
			x, y := s[r].wall, bs[r].wall
			if useCPU {
				x, y = s[r].cpu, bs[r].cpu
			}
			if y > 0 {
				ratios = append(ratios, float64(x)/float64(y))
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(ts.wall.Nanoseconds())/n, "ns/op")
		b.ReportMetric(float64(tb.wall.Nanoseconds())/n, "baseline-ns/op")
		if useCPU {
			b.ReportMetric(float64(ts.cpu.Nanoseconds())/n, "cpu-ns/op")
			b.ReportMetric(float64(tb.cpu.Nanoseconds())/n, "baseline-cpu-ns/op")
			if ts.cpu > 0 {
				b.ReportMetric(n/ts.cpu.Seconds(), "ops/cpu-s")
			}
			if tb.cpu > 0 {
				b.ReportMetric(n/tb.cpu.Seconds(), "baseline-ops/cpu-s")
			}
		}
		if len(ratios) > 0 {
			slices.Sort(ratios)
			med := ratios[len(ratios)/2]
			if len(ratios)%2 == 0 {
				med = (ratios[len(ratios)/2-1] + med) / 2
			}
			b.ReportMetric(med, "x-baseline")
			if med > 0 {
				b.ReportMetric((ratios[len(ratios)-1]-ratios[0])/med, "round-spread")
			}
		}
	})
}

// Medians runs every op once per iteration of b.Loop, in an order that rotates by one each
// iteration (so that load from other processes hits all of them alike), and returns each op's
// median wall time in nanoseconds, which a burst of load moves less than a mean. It is for a
// subject compared with a floor made of several parts (a plain request plus signatures), where
// the ratio is the subject's median over the sum of the parts' medians. Each op is run once
// before timing (warming connections and caches).
func Medians(b *testing.B, ops ...func() error) []float64 {
	b.Helper()
	for _, op := range ops {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	spent := make([][]time.Duration, len(ops))
	i := 0
	for b.Loop() {
		for j := range ops {
			k := (i + j) % len(ops)
			t0 := time.Now()
			if err := ops[k](); err != nil {
				b.Fatal(err)
			}
			spent[k] = append(spent[k], time.Since(t0))
		}
		i++
	}
	med := make([]float64, len(ops))
	for k := range ops {
		slices.Sort(spent[k])
		med[k] = float64(spent[k][len(spent[k])/2].Nanoseconds())
	}
	return med
}
