package refcompany

import (
	"sync"
	"time"
)

// Clock is the one test clock of the tree, shared by the reference Company and the Personal
// Agent under test so both see the same time. Its zero value runs with the real time plus an
// offset that Advance moves (timeouts and real waits keep working); after Freeze it stands at a
// fixed instant that only Advance moves (tokens, Session JWTs and expiries become exact). Safe
// for concurrent use.
type Clock struct {
	mu     sync.Mutex
	frozen bool
	at     time.Time     // the instant, when frozen
	off    time.Duration // the offset from the real time, when running
}

// NewFrozenClock returns a Clock frozen at t.
func NewFrozenClock(t time.Time) *Clock { return &Clock{frozen: true, at: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.at
	}
	return time.Now().Add(c.off)
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		c.at = c.at.Add(d)
	} else {
		c.off += d
	}
}

// Freeze stops the clock at its current time.
func (c *Clock) Freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		c.at, c.frozen = time.Now().Add(c.off), true
	}
}
