// Package replay is a bounded replay cache: the identifiers of signed tokens already accepted
// (a JWT's jti), each remembered until it may be forgotten, so that a token replayed while it is
// still valid is refused. Poppy 0.4 spec 5.3 ("Replayed JWTs") asks it of a Company for Session
// JWTs (agentcore/sessioncheck); the reference Company keeps one for its client assertions
// (RFC 7523 §3) and DPoP proofs (RFC 9449 §11.1).
//
// The cache holds at most Max entries. Expired entries go first, from a heap ordered by when
// each may be forgotten, so that a check costs O(log n) however many tokens came before; when
// the cache is still full, the entry that may be forgotten soonest goes, and from then on every
// token that would be forgotten as soon as it is refused (Forgotten): a forgotten identifier is
// never accepted again while its token is valid.
//
// A Cache is not safe for concurrent use; its owner holds its own lock around it.
package replay

import (
	"container/heap"
	"time"
)

// Verdict is what Check found.
type Verdict int

const (
	// Fresh: the identifier was not seen, and the cache still covers its token.
	Fresh Verdict = iota
	// Seen: the identifier was accepted before and its token is still valid.
	Seen
	// Forgotten: the token is as old as an entry the full cache had to forget, so the cache
	// can no longer tell whether it was seen.
	Forgotten
)

// Cache is a bounded replay cache. The zero value is not usable; use New.
type Cache struct {
	max   int
	until map[string]time.Time // identifier → when it may be forgotten
	order entries              // the same, soonest first
	floor time.Time            // a token forgotten at or before this is refused (Forgotten)
}

// New returns an empty cache that holds at most limit identifiers (at least one).
func New(limit int) *Cache {
	return &Cache{max: max(limit, 1), until: map[string]time.Time{}}
}

// Check forgets what may be forgotten at now, then reports whether key, whose token may be
// forgotten at forget, is Fresh, Seen or Forgotten. It records nothing (Remember does), so a
// caller can refuse the token for other reasons without using its identifier up.
func (c *Cache) Check(key string, forget, now time.Time) Verdict {
	for len(c.order) > 0 && now.After(c.order[0].forget) {
		e := heap.Pop(&c.order).(entry)
		if c.until[e.key].Equal(e.forget) {
			delete(c.until, e.key)
		}
	}
	if _, seen := c.until[key]; seen {
		return Seen
	}
	if !forget.After(c.floor) {
		return Forgotten
	}
	return Fresh
}

// Remember records key, which Check found Fresh, until forget, within the cache's bound: when it
// is full, the entry that may be forgotten soonest goes and raises the floor to its time.
func (c *Cache) Remember(key string, forget, now time.Time) {
	for len(c.until) >= c.max && len(c.order) > 0 {
		e := heap.Pop(&c.order).(entry)
		delete(c.until, e.key)
		if now.Before(e.forget) && e.forget.After(c.floor) {
			c.floor = e.forget
		}
	}
	c.until[key] = forget
	heap.Push(&c.order, entry{key: key, forget: forget})
}

// Use is Check, then Remember when the key is Fresh.
func (c *Cache) Use(key string, forget, now time.Time) Verdict {
	v := c.Check(key, forget, now)
	if v == Fresh {
		c.Remember(key, forget, now)
	}
	return v
}

// Len is how many identifiers the cache holds.
func (c *Cache) Len() int { return len(c.until) }

// entry is an identifier and when it may be forgotten.
type entry struct {
	key    string
	forget time.Time
}

// entries is a container/heap of entries, the soonest forgotten first.
type entries []entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].forget.Before(h[j].forget) }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
