package replay

import (
	"fmt"
	"testing"
	"time"
)

// TestCache: an identifier is refused while its token is valid and accepted after it may be
// forgotten; what may be forgotten goes; a full cache forgets the soonest entry and refuses
// every token as old as it.
func TestCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(3)
	steps := []struct {
		key    string
		forget time.Duration // after t0
		now    time.Duration
		want   Verdict
		held   int // entries after the step
	}{
		{"a", 60 * time.Second, 0, Fresh, 1},
		{"a", 60 * time.Second, 10 * time.Second, Seen, 1},
		{"b", 30 * time.Second, 10 * time.Second, Fresh, 2},
		{"b", 90 * time.Second, 29 * time.Second, Seen, 2},
		{"c", 120 * time.Second, 31 * time.Second, Fresh, 2}, // b may be forgotten
		{"b", 200 * time.Second, 32 * time.Second, Fresh, 3},
		{"d", 250 * time.Second, 33 * time.Second, Fresh, 3},    // full: a (60 s) goes, the floor is 60 s
		{"e", 50 * time.Second, 34 * time.Second, Forgotten, 3}, // as old as the floor covers
		{"a", 60 * time.Second, 35 * time.Second, Forgotten, 3}, // a's own replay, forgotten but refused
		{"a", 300 * time.Second, 61 * time.Second, Fresh, 3},    // a new token with the same jti, after the floor; c goes
		{"a", 300 * time.Second, 299 * time.Second, Seen, 1},
	}
	for i, s := range steps {
		if got := c.Use(s.key, t0.Add(s.forget), t0.Add(s.now)); got != s.want {
			t.Fatalf("step %d: Use(%s) = %v, want %v", i, s.key, got, s.want)
		}
		if c.Len() != s.held {
			t.Fatalf("step %d: %d held, want %d", i, c.Len(), s.held)
		}
	}
	// Filled past its bound for hours: at most its bound, each use O(log n).
	big := New(100)
	for i := range 10000 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		if v := big.Use(fmt.Sprint("j", i), now.Add(time.Minute), now); v != Fresh {
			t.Fatalf("j%d: %v", i, v)
		}
		if big.Len() > 100 || len(big.order) > 100 {
			t.Fatalf("after %d uses %d held (%d queued), over the bound of 100", i+1, big.Len(), len(big.order))
		}
	}
	// Check alone records nothing.
	if v := big.Check("x", t0.Add(time.Hour), t0.Add(11*time.Second)); v != Fresh || big.Check("x", t0.Add(time.Hour), t0.Add(11*time.Second)) != Fresh {
		t.Fatalf("Check then Check: %v", v)
	}
}
