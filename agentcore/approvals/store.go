package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"sync"
	"time"
)

// Store is the durable memory of the queue (DESIGN.md: SQLite through the vault). Its methods and
// record types mirror vault.State's approval API field for field (CreateApproval, AddRevision,
// TransitionApproval, GetApproval, ListApprovals, Decisions), so package main adapts *vault.State
// to it by copying (cli_approvals.go); [NewMemoryStore] is an in-memory Store for tests.
//
// Every method returns only after the change is durable: the queue writes before it sends or
// tells anyone (write-before-send, DESIGN.md invariant 3). Absent records are errors matching
// fs.ErrNotExist, an existing ID fs.ErrExist, and a failed compare-and-set [ErrConflict].
//
// Nothing secret is stored: requests are kept unsigned, without Session JWT or access token.
type Store interface {
	// CreateApproval stores a new approval with its first revision.
	CreateApproval(ctx context.Context, a Record, first Revision) error
	// AddRevision adds a newer revision (a higher Revision number) and sets the state.
	AddRevision(ctx context.Context, id string, r Revision, newState string) error
	// TransitionApproval sets the state to d.To if it is from and d.Revision is the latest
	// revision, and appends d to the decision log, in one transaction.
	TransitionApproval(ctx context.Context, id, from string, d Decision) error
	GetApproval(ctx context.Context, id string) (Record, error)
	// ListApprovals returns the approvals in any of states (all when none), oldest first.
	ListApprovals(ctx context.Context, states ...string) ([]Record, error)
	// Decisions returns the decision log of one approval ("" for all), in order.
	Decisions(ctx context.Context, id string) ([]Decision, error)
}

// ErrConflict is the error a Store returns (wrapped) when a compare-and-set finds another state
// or a newer revision than the caller expected. Package main maps vault.ErrConflict to it.
var ErrConflict = errors.New("the approval changed since it was read")

// Record is one approval as stored (vault.Approval).
type Record struct {
	ID        string
	Company   string
	Account   string
	SID       string
	Interface string          // "api" or "mcp"
	Request   json.RawMessage // the queue's request record (unsigned; no secret)
	State     string
	Created   time.Time
	Updated   time.Time
	Revisions []Revision // ascending
}

// Revision is one revision of the operation, the operation object exactly as the Company sent it
// (vault.Revision). Revision numbers the revisions of one approval from 1.
type Revision struct {
	Revision  int
	Operation json.RawMessage
	Received  time.Time
}

// Decision is one entry of the append-only decision log (vault.Decision).
type Decision struct {
	Seq        int64
	ApprovalID string
	Revision   int
	From, To   string
	Decision   string
	At         time.Time
	Note       string
}

// MemoryStore is an in-memory Store with the vault's semantics, for tests and for runs without a
// state database. Safe for concurrent use.
type MemoryStore struct {
	mu        sync.Mutex
	approvals map[string]*Record
	log       []Decision
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{approvals: map[string]*Record{}} }

var _ Store = (*MemoryStore)(nil)

func cloneRecord(r *Record) Record {
	c := *r
	c.Request = slices.Clone(r.Request)
	c.Revisions = make([]Revision, len(r.Revisions))
	for i, v := range r.Revisions {
		v.Operation = slices.Clone(v.Operation)
		c.Revisions[i] = v
	}
	return c
}

// CreateApproval implements Store.
func (m *MemoryStore) CreateApproval(_ context.Context, a Record, first Revision) error {
	if a.ID == "" || a.Company == "" || a.State == "" {
		return errors.New("create approval: id, company and state must not be empty")
	}
	if !json.Valid(a.Request) || !json.Valid(first.Operation) {
		return fmt.Errorf("create approval %q: the request and the operation must be valid JSON", a.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.approvals[a.ID]; ok {
		return fmt.Errorf("approval %q already exists: %w", a.ID, fs.ErrExist)
	}
	if a.Updated.IsZero() {
		a.Updated = a.Created
	}
	a.Revisions = []Revision{first}
	c := cloneRecord(&a)
	m.approvals[a.ID] = &c
	return nil
}

// AddRevision implements Store.
func (m *MemoryStore) AddRevision(_ context.Context, id string, r Revision, newState string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return fmt.Errorf("approval %q is not known: %w", id, fs.ErrNotExist)
	}
	if latest := a.Revisions[len(a.Revisions)-1].Revision; r.Revision <= latest {
		return fmt.Errorf("approval %q: revision %d is not newer than stored revision %d: %w", id, r.Revision, latest, ErrConflict)
	}
	r.Operation = slices.Clone(r.Operation)
	a.Revisions = append(a.Revisions, r)
	a.State, a.Updated = newState, r.Received
	return nil
}

// TransitionApproval implements Store.
func (m *MemoryStore) TransitionApproval(_ context.Context, id, from string, d Decision) error {
	if d.To == "" || d.Decision == "" {
		return fmt.Errorf("transition approval %q: the new state and the decision must not be empty", id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return fmt.Errorf("approval %q is not known: %w", id, fs.ErrNotExist)
	}
	if a.State != from {
		return fmt.Errorf("approval %q is %q, not %q: %w", id, a.State, from, ErrConflict)
	}
	if latest := a.Revisions[len(a.Revisions)-1].Revision; d.Revision != latest {
		return fmt.Errorf("approval %q: decision for revision %d but the latest is %d: %w", id, d.Revision, latest, ErrConflict)
	}
	a.State, a.Updated = d.To, d.At
	d.ApprovalID, d.From, d.Seq = id, from, int64(len(m.log)+1)
	m.log = append(m.log, d)
	return nil
}

// GetApproval implements Store.
func (m *MemoryStore) GetApproval(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return Record{}, fmt.Errorf("approval %q is not known: %w", id, fs.ErrNotExist)
	}
	return cloneRecord(a), nil
}

// ListApprovals implements Store.
func (m *MemoryStore) ListApprovals(_ context.Context, states ...string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, a := range m.approvals {
		if len(states) == 0 || slices.Contains(states, a.State) {
			out = append(out, cloneRecord(a))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Decisions implements Store.
func (m *MemoryStore) Decisions(_ context.Context, id string) ([]Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Decision
	for _, d := range m.log {
		if id == "" || d.ApprovalID == id {
			out = append(out, d)
		}
	}
	return out, nil
}
