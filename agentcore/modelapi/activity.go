package modelapi

import (
	"sync"
	"time"
)

// ActivityEntry is one request the model made: which tool, for which Company, when, with what
// result status and how long it took. It holds no arguments and no Company content, so the
// window can list it without rendering anything a Company wrote.
type ActivityEntry struct {
	Seq        int64     `json:"seq"`
	Tool       string    `json:"tool"`
	Company    string    `json:"company,omitempty"` // the domain or identifier the model named
	At         time.Time `json:"at"`
	Status     string    `json:"status"` // the tool's status (status.go), e.g. ok, performed, waiting_for_user, refused
	DurationMS int64     `json:"durationMs"`
	// ApprovalID is the approval handle the request created or read, if any.
	ApprovalID string `json:"approvalId,omitempty"`
}

// DefaultActivitySize is how many entries an [Activity] keeps by default.
const DefaultActivitySize = 500

// Activity is a bounded in-memory ring of the model's requests, newest kept. Safe for concurrent
// use.
type Activity struct {
	mu       sync.Mutex
	buf      []ActivityEntry
	next     int // index of the next write
	full     bool
	seq      int64
	onChange func(ActivityEntry)
}

// NewActivity returns a ring that keeps the last size entries (size <= 0: DefaultActivitySize).
func NewActivity(size int) *Activity {
	if size <= 0 {
		size = DefaultActivitySize
	}
	return &Activity{buf: make([]ActivityEntry, size)}
}

// OnChange sets a function called (outside the lock) after each new entry, e.g. to emit
// activity:changed to the window. It must return quickly.
func (a *Activity) OnChange(f func(ActivityEntry)) {
	a.mu.Lock()
	a.onChange = f
	a.mu.Unlock()
}

// Add records e, assigning its sequence number, and returns it.
func (a *Activity) Add(e ActivityEntry) ActivityEntry {
	a.mu.Lock()
	a.seq++
	e.Seq = a.seq
	a.buf[a.next] = e
	a.next = (a.next + 1) % len(a.buf)
	if a.next == 0 {
		a.full = true
	}
	f := a.onChange
	a.mu.Unlock()
	if f != nil {
		f(e)
	}
	return e
}

// List returns up to limit entries, newest first (limit <= 0: all kept).
func (a *Activity) List(limit int) []ActivityEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.next
	if a.full {
		n = len(a.buf)
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]ActivityEntry, 0, limit)
	for i := 1; i <= limit; i++ {
		out = append(out, a.buf[(a.next-i+len(a.buf))%len(a.buf)])
	}
	return out
}
