package benchratio

import (
	"testing"
	"time"
)

// TestChunk: a side is timed in chunks that take at least minChunk, bounded by maxChunk.
func TestChunk(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{0, maxChunk},
		{time.Nanosecond, maxChunk},
		{minChunk / maxChunk, maxChunk},
		{time.Microsecond, 5000},
		{10 * time.Microsecond, 500},
		{7700 * time.Nanosecond, 649},
		{2 * time.Millisecond, 2},
		{minChunk, 1},
		{time.Second, 1},
	} {
		if got := chunk(c.d); got != c.want {
			t.Errorf("chunk(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestCalibrate: a chunk is sized from an operation's warm time, not from its first call, and an
// operation that takes minChunk by itself is called once to find that out.
func TestCalibrate(t *testing.T) {
	for _, c := range []struct {
		name      string
		first     time.Duration // the first call's cost
		next      time.Duration // every later call's
		want      int
		wantCalls int // at most
	}{
		{"cold-first-call", 2 * time.Millisecond, time.Microsecond, 5000, 4096},
		{"steady", 10 * time.Microsecond, 10 * time.Microsecond, 500, 256},
		{"slow", 10 * time.Millisecond, 10 * time.Millisecond, 1, 1},
		{"slow-after-a-fast-first-call", time.Microsecond, 6 * time.Millisecond, 1, 2},
		{"tiny", time.Nanosecond, time.Nanosecond, maxChunk, 1 << 21},
	} {
		t.Run(c.name, func(t *testing.T) {
			var now time.Duration
			calls := 0
			op := func(*testing.B) {
				if calls == 0 {
					now += c.first
				} else {
					now += c.next
				}
				calls++
			}
			got := calibrate(nil, op, clocks{wall: func() time.Duration { return now }})
			if got != c.want {
				t.Errorf("chunk %d, want %d", got, c.want)
			}
			if calls > c.wantCalls {
				t.Errorf("%d calls to calibrate, want at most %d", calls, c.wantCalls)
			}
		})
	}
}

// TestMeasureChunksEachSide: with clocks that advance by each operation's cost, a side of 20 µs
// beside one of 5 ms is called in chunks of its own (250 per turn, against 1), and the
// reported times and ratio are per operation of each side.
func TestMeasureChunksEachSide(t *testing.T) {
	for _, c := range []struct {
		name           string
		subject, base  time.Duration
		wantCalls      float64 // subject calls per baseline call
		wantX, wantCPU float64
	}{
		{"short-subject", 20 * time.Microsecond, 5 * time.Millisecond, 250, 0.004, 20000},
		{"short-baseline", 5 * time.Millisecond, 20 * time.Microsecond, 1.0 / 250, 250, 5e6},
		{"both-long", 3 * time.Millisecond, 6 * time.Millisecond, 1, 0.5, 3e6},
	} {
		t.Run(c.name, func(t *testing.T) {
			var now time.Duration
			clk := clocks{wall: func() time.Duration { return now }, cpu: func() time.Duration { return now }}
			var subject, base int
			res := testing.Benchmark(func(b *testing.B) {
				subject, base = 0, 0
				measure(b, func(*testing.B) { subject++; now += c.subject },
					func(*testing.B) { base++; now += c.base }, clk)
			})
			if base == 0 || subject == 0 {
				t.Fatalf("calls: subject %d, baseline %d", subject, base)
			}
			if got := float64(subject) / float64(base); got < c.wantCalls*0.9 || got > c.wantCalls*1.1 {
				t.Errorf("subject called %.3f times per baseline call, want %.3f", got, c.wantCalls)
			}
			if x := res.Extra["x-baseline"]; x < c.wantX*0.999 || x > c.wantX*1.001 {
				t.Errorf("x-baseline %.5f, want %.5f", x, c.wantX)
			}
			if v := res.Extra["cpu-ns/op"]; v < c.wantCPU*0.999 || v > c.wantCPU*1.001 {
				t.Errorf("cpu-ns/op %.0f, want %.0f", v, c.wantCPU)
			}
			if res.Extra["round-spread"] != 0 {
				t.Errorf("round-spread %.4f with operations of fixed cost", res.Extra["round-spread"])
			}
		})
	}
}

// TestMeasureCollects: with collect set, it runs before every turn (not inside a side's timing)
// and each side's allocation is reported per operation, with gc-excluded.
func TestMeasureCollects(t *testing.T) {
	var now time.Duration
	var allocated uint64
	collections, turns := 0, 0
	inSide := false
	clk := clocks{
		wall: func() time.Duration { return now },
		cpu:  func() time.Duration { return now },
		collect: func() {
			if inSide {
				t.Error("collected while a side was timed")
			}
			collections++
		},
		allocated: func() uint64 { return allocated },
	}
	res := testing.Benchmark(func(b *testing.B) {
		collections, turns = 0, 0
		measure(b, func(*testing.B) { inSide = true; now += time.Millisecond; allocated += 1000; inSide = false },
			func(*testing.B) { turns++; now += 2 * time.Millisecond; allocated += 10 }, clk)
	})
	if collections == 0 || collections > turns {
		t.Errorf("%d collections in %d turns; want one per turn", collections, turns)
	}
	if res.Extra["alloc-B/op"] != 1000 || res.Extra["baseline-alloc-B/op"] != 10 || res.Extra["gc-excluded"] != 1 {
		t.Errorf("metrics %v", res.Extra)
	}
	if x := res.Extra["x-baseline"]; x < 0.4999 || x > 0.5001 {
		t.Errorf("x-baseline %.4f, want 0.5", x)
	}
}
