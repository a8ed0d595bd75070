package refcompany

import (
	"fmt"
	"testing"
	"time"
)

// TestReplayCache: a jti is refused until it expires and accepted after; what expired is
// forgotten, so the cache holds only the unexpired jtis however many were used.
func TestReplayCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c replayCache
	steps := []struct {
		key  string
		exp  time.Duration // after t0
		now  time.Duration
		want bool
		held int // entries after the step
	}{
		{"a", 60 * time.Second, 0, true, 1},
		{"a", 60 * time.Second, 10 * time.Second, false, 1},
		{"b", 30 * time.Second, 10 * time.Second, true, 2},
		{"b", 90 * time.Second, 29 * time.Second, false, 2},
		{"c", 120 * time.Second, 31 * time.Second, true, 2}, // b expired
		{"b", 200 * time.Second, 32 * time.Second, true, 3},
		{"a", 300 * time.Second, 61 * time.Second, true, 3}, // a expired, then used again
		{"a", 300 * time.Second, 299 * time.Second, false, 1},
	}
	for i, s := range steps {
		if got := c.use(s.key, t0.Add(s.exp), t0.Add(s.now)); got != s.want {
			t.Fatalf("step %d: use(%s) = %v, want %v", i, s.key, got, s.want)
		}
		if len(c.until) != s.held || len(c.queue) < len(c.until) {
			t.Fatalf("step %d: %d held (%d queued), want %d", i, len(c.until), len(c.queue), s.held)
		}
	}
	// Many jtis, each expiring a minute after its use, one a second: at most about 60 held.
	for i := range 10000 {
		now := t0.Add(time.Hour + time.Duration(i)*time.Second)
		if !c.use(fmt.Sprint("j", i), now.Add(time.Minute), now) {
			t.Fatalf("j%d refused", i)
		}
	}
	if len(c.until) > 61 || len(c.queue) > 61 {
		t.Fatalf("%d held, %d queued after 10,000 uses a minute apart from expiry", len(c.until), len(c.queue))
	}
}
