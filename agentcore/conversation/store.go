package conversation

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"time"
)

// Store is the conversation memory (DESIGN.md: SQLite through the vault). Its record mirrors
// vault.Conversation field for field, so package main adapts *vault.State by copying
// (cli_conversations.go); [NewMemoryStore] is an in-memory Store for tests. State holds the
// engine's JSON (see [Manager]): nothing secret is ever written there (DESIGN.md invariant 5).
// Every method returns only after the change is durable: messages are persisted BEFORE they are
// sent (spec 8.3). An absent record is an error matching fs.ErrNotExist.
type Store interface {
	PutConversation(ctx context.Context, r Record) error
	GetConversation(ctx context.Context, company, id string) (Record, error)
	// ListConversations returns company's records, most recently updated first.
	ListConversations(ctx context.Context, company string) ([]Record, error)
}

// Record is one stored conversation (vault.Conversation).
type Record struct {
	Company string
	ID      string
	Account string
	Cursor  string
	State   string
	Updated time.Time
}

// MemoryStore is an in-memory Store. Safe for concurrent use.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[string]Record
	// Puts counts PutConversation calls (benchmarks and tests read it).
	Puts int
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]Record{}} }

var _ Store = (*MemoryStore)(nil)

// PutConversation implements Store.
func (m *MemoryStore) PutConversation(_ context.Context, r Record) error {
	if r.Company == "" || r.ID == "" {
		return fmt.Errorf("put conversation: company and id must not be empty")
	}
	m.mu.Lock()
	m.recs[r.Company+"\x00"+r.ID] = r
	m.Puts++
	m.mu.Unlock()
	return nil
}

// GetConversation implements Store.
func (m *MemoryStore) GetConversation(_ context.Context, company, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[company+"\x00"+id]
	if !ok {
		return Record{}, fmt.Errorf("conversation %q with %s is not known: %w", id, company, fs.ErrNotExist)
	}
	return r, nil
}

// ListConversations implements Store.
func (m *MemoryStore) ListConversations(_ context.Context, company string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, r := range m.recs {
		if r.Company == company {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
