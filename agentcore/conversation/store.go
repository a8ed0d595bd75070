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

// EntryStore is a Store that also keeps each conversation's transcript (spec 8.5), so the
// window shows a conversation's history after a restart. Its records mirror
// vault.ConversationEntry. When the Manager's Store is an EntryStore, handled entries are
// written only with [EntryStore.SaveConversation], in the same durable transaction as the cursor
// that covers them, and read back lazily by range ([Manager.View], [Manager.Entries]); otherwise
// the transcript is kept in memory for the run only.
type EntryStore interface {
	Store
	// SaveConversation stores r (as PutConversation) and appends entries to r's transcript in
	// one durable transaction; an entry whose EventID the transcript already holds is skipped.
	// It returns how many entries the transcript holds afterwards.
	SaveConversation(ctx context.Context, r Record, entries []EntryRecord) (int, error)
	// ConversationEntries returns the transcript entries [from, from+limit) in handling order
	// and how many there are; limit 0 returns only the count.
	ConversationEntries(ctx context.Context, company, id string, from, limit int) ([]EntryRecord, int, error)
}

// EntryRecord is one stored transcript entry (vault.ConversationEntry): the event ID and the JSON
// of the [Entry]. Company content and the user's words only; never a secret.
type EntryRecord struct {
	EventID string
	Entry   string
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

// MemoryStore is an in-memory EntryStore. Safe for concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	recs    map[string]Record
	entries map[string][]EntryRecord
	seen    map[string]bool // conversation key \x00 event ID
	// Puts counts PutConversation calls (benchmarks and tests read it).
	Puts int
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{recs: map[string]Record{}, entries: map[string][]EntryRecord{}, seen: map[string]bool{}}
}

var _ EntryStore = (*MemoryStore)(nil)

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

// SaveConversation implements EntryStore.
func (m *MemoryStore) SaveConversation(ctx context.Context, r Record, entries []EntryRecord) (int, error) {
	for _, e := range entries {
		if e.EventID == "" {
			return 0, fmt.Errorf("save conversation %s: a transcript entry has no event ID; nothing was saved", r.ID)
		}
	}
	if err := m.PutConversation(ctx, r); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := r.Company + "\x00" + r.ID
	for _, e := range entries {
		if !m.seen[k+"\x00"+e.EventID] {
			m.seen[k+"\x00"+e.EventID] = true
			m.entries[k] = append(m.entries[k], e)
		}
	}
	return len(m.entries[k]), nil
}

// ConversationEntries implements EntryStore.
func (m *MemoryStore) ConversationEntries(_ context.Context, company, id string, from, limit int) ([]EntryRecord, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es := m.entries[company+"\x00"+id]
	n := len(es)
	from = max(0, min(from, n))
	end := min(n, from+max(limit, 0))
	return append([]EntryRecord(nil), es[from:end]...), n, nil
}
