// Package benchratio runs a benchmark's subject and its baseline in the same loop, alternately,
// timing each, and reports their ratio (b.ReportMetric, unit "x-baseline"), so that load from
// other processes on a small machine slows both alike instead of whichever ran second.
// `make bench` prints the ratios as one table (scripts/benchtable.sh).
//
// Four things keep a ratio repeatable on a shared two-core machine:
//   - interleaving: each turn runs both sides, in alternating order, each side timed in a
//     chunk of its own (one operation, or as many of a short one as take minChunk), so that
//     reading the clocks is a small part of even a side of a few microseconds, and so that the
//     garbage collector's work that one side's allocations start, which runs on while the
//     other side's chunk is timed, is a small part of that chunk;
//   - rounds: the iterations are split into up to Rounds rounds, a ratio is taken per round and
//     the median is reported (x-baseline), so a burst of load during one round does not move
//     it; round-spread reports how far the rounds' ratios lie apart ((max-min)/median), which
//     the table uses to mark a row noisy;
//   - CPU time, for benchmarks whose both sides only compute in this process ([RunCPU]): the
//     process's CPU time (user and system, every thread: the goroutines an op starts count) is
//     what the ratio compares, which other processes' load on the cores does not inflate the
//     way it inflates wall time. A side that waits (a disk flush, a browser) is timed by the
//     wall clock ([Run]);
//   - no collection while a side is timed, for a benchmark whose process holds a large heap or
//     whose operations wait for another process ([RunCPUCollected]): a collection's mark
//     workers take the cores the operations leave idle, and it would be counted by whichever
//     side it fell into.
package benchratio

import (
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"
)

// Rounds is how many rounds the iterations are split into, at most (fewer when b.N is smaller).
const Rounds = 7

// minChunk is the least time one timed chunk of a side's operations takes (a chunk of a single
// operation may take longer). A garbage collection cycle of a benchmark's small heap takes a few
// hundred microseconds of CPU beside the operations; in chunks of 100 µs, whether it fell into
// the baseline's chunk or the subject's moved an allocating benchmark's ratio by up to 2.5 times
// from one run to the next (BenchmarkApprovalsList 17–43, BenchmarkCall/bridge-http 58–88 in
// five runs each), in chunks of 5 ms by at most 12 % (14.7–16.4 and 55.6–57.7).
const minChunk = 5 * time.Millisecond

// Run runs the sub-benchmark subject+"/vs="+baseline: turn by turn it calls subjectOp and
// baselineOp (which first alternates), each call doing one operation, each side a chunk of calls
// (chunk) per turn, until the side with the larger chunks has done b.N operations. It reports
// the subject's wall time per operation as ns/op, the baseline's as baseline-ns/op, the median of
// the rounds' subject/baseline ratios of wall time per operation as x-baseline, and the rounds'
// spread as round-spread.
func Run(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	b.Run(subject+"/vs="+baseline, func(b *testing.B) { measure(b, subjectOp, baselineOp, realClocks(false)) })
}

// RunCPU is Run comparing the process's CPU time instead of wall time (x-baseline, with
// cpu-ns/op and baseline-cpu-ns/op, and each side's operations per CPU-second as ops/cpu-s and
// baseline-ops/cpu-s; ns/op and baseline-ns/op stay wall time), for a subject and a baseline
// that only compute in this process: the process's user and system time (getrusage on Unix,
// GetProcessTimes on Windows), so that waiting for a core other processes hold does not count.
// Where the process's CPU time cannot be read it compares wall time.
func RunCPU(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	b.Run(subject+"/vs="+baseline, func(b *testing.B) { measure(b, subjectOp, baselineOp, realClocks(cpuTime() > 0)) })
}

// RunCPUCollected is RunCPU for a benchmark whose process holds a large heap (a Company's big
// API descriptions beside Poppydesk's index of them) or whose operations wait for another
// process (the keyring, over D-Bus): the garbage collector runs, untimed, before each turn, so
// that no collection runs while a side is timed, and the ratio compares the CPU time of the
// operations themselves. A collection's mark workers take whatever core the operations leave
// idle, so what a collection costs in CPU time depends on how much the operations wait, and
// whichever side's chunk it fell into counted it: the ratio of a page of list_api_operations on
// a Graph-sized API to a trivial call moved between 6.5 and 10.3 from run to run, and was
// 6.3–6.4 with collections made rare (GOGC=800); a refresh against a metadata GET, whose rounds
// differed by 30–50 %, 12–15 % with them rare. What the collector would cost each side grows
// with what it allocates, which the sub-benchmark reports beside the ratio (alloc-B/op,
// baseline-alloc-B/op); its metric gc-excluded says that the collector's work is left out
// (scripts/benchtable.sh notes it).
func RunCPUCollected(b *testing.B, subject, baseline string, subjectOp, baselineOp func(b *testing.B)) {
	b.Helper()
	b.Run(subject+"/vs="+baseline, func(b *testing.B) {
		clk := realClocks(cpuTime() > 0)
		clk.collect = func() {
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
		}
		clk.allocated = allocatedBytes
		measure(b, subjectOp, baselineOp, clk)
	})
}

// allocatedBytes is how many bytes the process has allocated on the heap so far.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
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

// side is one side's totals in one round: its operations and the time they took.
type side struct {
	ops       int
	wall, cpu time.Duration
	bytes     uint64 // allocated, when clocks.allocated is set
}

// chunk is how many operations of a side that took d once are timed together: enough that a
// chunk takes at least minChunk (reading the clocks, getrusage being a system call, then stays a
// small part of what is timed), at most maxChunk, and at least one.
func chunk(d time.Duration) int {
	return min(max(int(minChunk/max(d, time.Nanosecond)), 1), maxChunk)
}

// maxChunk bounds a chunk's operations: a chunk of the shortest side (tens of nanoseconds)
// still takes minChunk.
const maxChunk = 1_000_000

// calibrate is how many operations of op make a chunk (chunk), sized from op's warm time per
// operation: a first call, which a cold cache or a first allocation can make many times slower
// than the next, is timed alone and decides only for an operation that takes minChunk by itself;
// otherwise op runs in doubling batches until a batch takes a quarter of minChunk, and that
// batch's time per operation sizes the chunk. A chunk sized from the first call alone (as many
// as 100 µs for a side of 1 µs) let the collector's cycles that the other side's allocations
// start fall into a side's short chunks by chance, which moved a ratio of two sub-microsecond
// sides by 25 % between runs.
func calibrate(b *testing.B, op func(*testing.B), clk clocks) int {
	t := clk.wall()
	op(b)
	if d := clk.wall() - t; d >= minChunk {
		return 1
	}
	for n := 1; ; n *= 2 {
		t := clk.wall()
		for range n {
			op(b)
		}
		if d := clk.wall() - t; d >= minChunk/4 || n >= maxChunk {
			return chunk(d / time.Duration(n))
		}
	}
}

// clocks are what measure reads: the wall clock, and the process's CPU time when cpu is set.
type clocks struct {
	wall func() time.Duration // time since some fixed instant
	cpu  func() time.Duration // nil: the ratio compares wall time
	// collect, when set, runs before each turn, untimed (RunCPUCollected), and allocated
	// counts the bytes each side allocates.
	collect   func()
	allocated func() uint64
}

// realClocks are the real clocks, with the process's CPU time when useCPU.
func realClocks(useCPU bool) clocks {
	t0 := time.Now()
	c := clocks{wall: func() time.Duration { return time.Since(t0) }}
	if useCPU {
		c.cpu = cpuTime
	}
	return c
}

// measure is Run's sub-benchmark: the turns, the rounds and the reported metrics.
func measure(b *testing.B, subjectOp, baselineOp func(b *testing.B), clk clocks) {
	rounds := min(b.N, Rounds)
	s, bs := make([]side, rounds), make([]side, rounds)
	// Each side is timed in chunks of its own size (chunk): a side of a few microseconds
	// beside one of a millisecond is timed many operations at a time, the other one at a
	// time, and each round's ratio compares their times per operation.
	ks, kb := 1, 1
	if b.N > 1 {
		ks, kb = calibrate(b, subjectOp, clk), calibrate(b, baselineOp, clk)
	}
	timed := func(op func(*testing.B), n int, into *side) {
		var c0 time.Duration
		var a0 uint64
		if clk.allocated != nil {
			a0 = clk.allocated()
		}
		if clk.cpu != nil {
			c0 = clk.cpu()
		}
		t := clk.wall()
		for range n {
			op(b)
		}
		into.wall += clk.wall() - t
		if clk.cpu != nil {
			into.cpu += clk.cpu() - c0
		}
		if clk.allocated != nil {
			into.bytes += clk.allocated() - a0
		}
		into.ops += n
	}
	// b.N counts the operations of the side with the larger chunks; the other side runs
	// its own chunk in each turn.
	step := max(ks, kb)
	b.ResetTimer()
	for i, turn := 0, 0; i < b.N; turn++ {
		r := i * rounds / b.N
		ns, nb := ks, kb
		if left := b.N - i; left < step {
			ns, nb = max(ks*left/step, 1), max(kb*left/step, 1)
		}
		if clk.collect != nil {
			clk.collect()
		}
		if turn%2 == 0 {
			timed(subjectOp, ns, &s[r])
			timed(baselineOp, nb, &bs[r])
		} else {
			timed(baselineOp, nb, &bs[r])
			timed(subjectOp, ns, &s[r])
		}
		i += step
	}
	b.StopTimer()
	var ts, tb side
	var ratios []float64
	for r := range rounds {
		ts.ops, ts.wall, ts.cpu, ts.bytes = ts.ops+s[r].ops, ts.wall+s[r].wall, ts.cpu+s[r].cpu, ts.bytes+s[r].bytes
		tb.ops, tb.wall, tb.cpu, tb.bytes = tb.ops+bs[r].ops, tb.wall+bs[r].wall, tb.cpu+bs[r].cpu, tb.bytes+bs[r].bytes
		if s[r].ops == 0 || bs[r].ops == 0 {
			continue
		}
		x, y := s[r].wall, bs[r].wall
		if clk.cpu != nil {
			x, y = s[r].cpu, bs[r].cpu
		}
		if y > 0 {
			ratios = append(ratios, perOp(x, s[r].ops)/perOp(y, bs[r].ops))
		}
	}
	b.ReportMetric(perOp(ts.wall, ts.ops), "ns/op")
	b.ReportMetric(perOp(tb.wall, tb.ops), "baseline-ns/op")
	if clk.cpu != nil {
		b.ReportMetric(perOp(ts.cpu, ts.ops), "cpu-ns/op")
		b.ReportMetric(perOp(tb.cpu, tb.ops), "baseline-cpu-ns/op")
		if ts.cpu > 0 {
			b.ReportMetric(float64(ts.ops)/ts.cpu.Seconds(), "ops/cpu-s")
		}
		if tb.cpu > 0 {
			b.ReportMetric(float64(tb.ops)/tb.cpu.Seconds(), "baseline-ops/cpu-s")
		}
	}
	if clk.allocated != nil {
		b.ReportMetric(float64(ts.bytes)/float64(max(ts.ops, 1)), "alloc-B/op")
		b.ReportMetric(float64(tb.bytes)/float64(max(tb.ops, 1)), "baseline-alloc-B/op")
	}
	if clk.collect != nil {
		b.ReportMetric(1, "gc-excluded")
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
}

// perOp is d per operation in nanoseconds (0 for no operation).
func perOp(d time.Duration, ops int) float64 {
	if ops == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(ops)
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
