package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemoryEngineState is an in-memory [EngineState] for tests of the engine and of the packages
// that call it (the app passes the SQLite vault.State instead). Safe for concurrent use.
type MemoryEngineState struct {
	mu        sync.Mutex
	settings  map[string]string
	cache     map[string]CacheEntry
	companies map[string]Company
	sessions  map[string]Session
	sidOrder  []string
	exchanges []Exchange
}

var _ EngineState = (*MemoryEngineState)(nil)

// NewMemoryEngineState returns an empty MemoryEngineState.
func NewMemoryEngineState() *MemoryEngineState {
	return &MemoryEngineState{settings: map[string]string{}, cache: map[string]CacheEntry{},
		companies: map[string]Company{}, sessions: map[string]Session{}}
}

// GetSetting implements [Settings].
func (m *MemoryEngineState) GetSetting(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.settings[key]
	if !ok {
		return "", fmt.Errorf("setting %q is not set: %w", key, ErrNotFound)
	}
	return v, nil
}

// SetSetting implements [Settings].
func (m *MemoryEngineState) SetSetting(_ context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settings[key] = value
	return nil
}

// GetCacheEntry implements [EngineState].
func (m *MemoryEngineState) GetCacheEntry(_ context.Context, url string) (CacheEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cache[url]
	if !ok {
		return CacheEntry{URL: url}, fmt.Errorf("no cached response for %s: %w", url, ErrNotFound)
	}
	e.Body = slices.Clone(e.Body)
	return e, nil
}

// PutCacheEntry implements [EngineState].
func (m *MemoryEngineState) PutCacheEntry(_ context.Context, e CacheEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.Body = slices.Clone(e.Body)
	m.cache[e.URL] = e
	return nil
}

// DeleteCacheEntry implements [EngineState].
func (m *MemoryEngineState) DeleteCacheEntry(_ context.Context, url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cache, url)
	return nil
}

// PutCompany implements [EngineState].
func (m *MemoryEngineState) PutCompany(_ context.Context, c Company) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.Document = slices.Clone(c.Document)
	m.companies[c.Identifier] = c
	return nil
}

// GetCompany implements [EngineState].
func (m *MemoryEngineState) GetCompany(_ context.Context, identifier string) (Company, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.companies[identifier]
	if !ok {
		return c, fmt.Errorf("company %s is not known: %w", identifier, ErrNotFound)
	}
	c.Document = slices.Clone(c.Document)
	return c, nil
}

// CompanyNames implements [EngineState].
func (m *MemoryEngineState) CompanyNames(_ context.Context, ids []string) (map[string]CompanyName, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]CompanyName, len(ids))
	for _, id := range ids {
		if c, ok := m.companies[id]; ok {
			out[id] = CompanyName{Name: c.Name, Domain: c.Domain}
		}
	}
	return out, nil
}

// AddSession implements [EngineState]; a used sid fails with [ErrExists] (sids are never reused).
func (m *MemoryEngineState) AddSession(_ context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.SID]; ok {
		return fmt.Errorf("session id %q was already used: %w", s.SID, ErrExists)
	}
	s.Extensions = slices.Clone(s.Extensions)
	m.sessions[s.SID] = s
	m.sidOrder = append(m.sidOrder, s.SID)
	return nil
}

// EndSession implements [EngineState].
func (m *MemoryEngineState) EndSession(_ context.Context, sid string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sid]
	if !ok {
		return fmt.Errorf("session %q is not known: %w", sid, ErrNotFound)
	}
	s.Ended = at
	m.sessions[sid] = s
	return nil
}

// AddExchange implements [EngineState].
func (m *MemoryEngineState) AddExchange(_ context.Context, e Exchange) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.ID = int64(len(m.exchanges) + 1)
	m.exchanges = append(m.exchanges, e)
	return e.ID, nil
}

// AddExchanges implements [EngineState].
func (m *MemoryEngineState) AddExchanges(ctx context.Context, es []Exchange) ([]int64, error) {
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i], _ = m.AddExchange(ctx, e)
	}
	return ids, nil
}

// Sessions returns every recorded Session in the order they were added.
func (m *MemoryEngineState) Sessions() []Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Session, 0, len(m.sidOrder))
	for _, sid := range m.sidOrder {
		out = append(out, m.sessions[sid])
	}
	return out
}

// Exchanges returns every recorded exchange, oldest first.
func (m *MemoryEngineState) Exchanges() []Exchange {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Exchange, len(m.exchanges))
	for i, e := range m.exchanges {
		e.RequestHeaders, e.ResponseHeaders = http.Header(e.RequestHeaders).Clone(), http.Header(e.ResponseHeaders).Clone()
		out[i] = e
	}
	return out
}

// MemoryApprovals is an in-memory [Approvals] with the vault's semantics, for tests. Safe for
// concurrent use.
type MemoryApprovals struct {
	mu        sync.Mutex
	approvals map[string]*Approval
	log       []Decision
}

var _ Approvals = (*MemoryApprovals)(nil)
var _ ApprovalPages = (*MemoryApprovals)(nil)

// NewMemoryApprovals returns an empty MemoryApprovals.
func NewMemoryApprovals() *MemoryApprovals {
	return &MemoryApprovals{approvals: map[string]*Approval{}}
}

func cloneApproval(a *Approval) Approval {
	c := *a
	c.Request = slices.Clone(a.Request)
	c.Revisions = make([]Revision, len(a.Revisions))
	for i, v := range a.Revisions {
		v.Operation = slices.Clone(v.Operation)
		c.Revisions[i] = v
	}
	return c
}

// CreateApproval implements [Approvals].
func (m *MemoryApprovals) CreateApproval(_ context.Context, a Approval, first Revision) error {
	if a.ID == "" || a.Company == "" || a.State == "" {
		return errors.New("create approval: id, company and state must not be empty")
	}
	if !json.Valid(a.Request) || !json.Valid(first.Operation) {
		return fmt.Errorf("create approval %q: the request and the operation must be valid JSON", a.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.approvals[a.ID]; ok {
		return fmt.Errorf("approval %q already exists: %w", a.ID, ErrExists)
	}
	if a.Updated.IsZero() {
		a.Updated = a.Created
	}
	a.Revisions = []Revision{first}
	c := cloneApproval(&a)
	m.approvals[a.ID] = &c
	return nil
}

// AddRevision implements [Approvals].
func (m *MemoryApprovals) AddRevision(_ context.Context, id string, r Revision, newState string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return fmt.Errorf("approval %q is not known: %w", id, ErrNotFound)
	}
	if latest := a.Revisions[len(a.Revisions)-1].Revision; r.Revision <= latest {
		return fmt.Errorf("approval %q: revision %d is not newer than stored revision %d: %w", id, r.Revision, latest, ErrConflict)
	}
	r.Operation = slices.Clone(r.Operation)
	a.Revisions = append(a.Revisions, r)
	a.State, a.Updated = newState, r.Received
	return nil
}

// TransitionApproval implements [Approvals].
func (m *MemoryApprovals) TransitionApproval(_ context.Context, id, from string, d Decision) error {
	if d.To == "" || d.Decision == "" {
		return fmt.Errorf("transition approval %q: the new state and the decision must not be empty", id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return fmt.Errorf("approval %q is not known: %w", id, ErrNotFound)
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

// GetApproval implements [Approvals].
func (m *MemoryApprovals) GetApproval(_ context.Context, id string) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return Approval{}, fmt.Errorf("approval %q is not known: %w", id, ErrNotFound)
	}
	return cloneApproval(a), nil
}

// ListApprovals implements [Approvals].
func (m *MemoryApprovals) ListApprovals(_ context.Context, states ...string) ([]Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Approval
	for _, a := range m.approvals {
		if len(states) == 0 || slices.Contains(states, a.State) {
			out = append(out, cloneApproval(a))
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

// ListApprovalsPage implements [ApprovalPages].
func (m *MemoryApprovals) ListApprovalsPage(_ context.Context, q ApprovalQuery) ([]Approval, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Approval
	for _, a := range m.approvals {
		if q.Match(a) {
			out = append(out, cloneApproval(a))
		}
	}
	slices.SortFunc(out, func(a, b Approval) int { return NewestFirst(&a, &b) })
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// Decisions implements [Approvals].
func (m *MemoryApprovals) Decisions(_ context.Context, id string) ([]Decision, error) {
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

// DecisionsOf implements [ApprovalPages].
func (m *MemoryApprovals) DecisionsOf(_ context.Context, ids []string, kinds ...string) (map[string][]Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]Decision, len(ids))
	for _, d := range m.log {
		if slices.Contains(ids, d.ApprovalID) && (len(kinds) == 0 || slices.Contains(kinds, d.Decision)) {
			out[d.ApprovalID] = append(out[d.ApprovalID], d)
		}
	}
	return out, nil
}

// MemoryConversations is an in-memory [Transcripts], for tests. Safe for concurrent use.
type MemoryConversations struct {
	mu      sync.Mutex
	convs   map[string]Conversation // company \x00 id
	entries map[string][]ConversationEntry
	seen    map[string]bool // company \x00 id \x00 event ID
}

var _ Transcripts = (*MemoryConversations)(nil)

// NewMemoryConversations returns an empty MemoryConversations.
func NewMemoryConversations() *MemoryConversations {
	return &MemoryConversations{convs: map[string]Conversation{}, entries: map[string][]ConversationEntry{}, seen: map[string]bool{}}
}

// PutConversation implements [Conversations].
func (m *MemoryConversations) PutConversation(_ context.Context, c Conversation) error {
	if c.Company == "" || c.ID == "" {
		return errors.New("put conversation: company and id must not be empty")
	}
	m.mu.Lock()
	m.convs[c.Company+"\x00"+c.ID] = c
	m.mu.Unlock()
	return nil
}

// GetConversation implements [Conversations].
func (m *MemoryConversations) GetConversation(_ context.Context, company, id string) (Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.convs[company+"\x00"+id]
	if !ok {
		return Conversation{}, fmt.Errorf("conversation %q with %s is not known: %w", id, company, ErrNotFound)
	}
	return c, nil
}

// ListConversations implements [Conversations].
func (m *MemoryConversations) ListConversations(_ context.Context, company string) ([]Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Conversation
	for _, c := range m.convs {
		if c.Company == company {
			out = append(out, c)
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

// SaveConversation implements [Transcripts].
func (m *MemoryConversations) SaveConversation(ctx context.Context, c Conversation, entries []ConversationEntry) (int, error) {
	for _, e := range entries {
		if e.EventID == "" {
			return 0, fmt.Errorf("save conversation %s: a transcript entry has no event ID; nothing was saved", c.ID)
		}
	}
	if err := m.PutConversation(ctx, c); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := c.Company + "\x00" + c.ID
	for _, e := range entries {
		if !m.seen[k+"\x00"+e.EventID] {
			m.seen[k+"\x00"+e.EventID] = true
			m.entries[k] = append(m.entries[k], e)
		}
	}
	return len(m.entries[k]), nil
}

// ConversationEntries implements [Transcripts].
func (m *MemoryConversations) ConversationEntries(_ context.Context, company, id string, from, limit int) ([]ConversationEntry, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es := m.entries[company+"\x00"+id]
	n := len(es)
	from = max(0, min(from, n))
	end := min(n, from+max(limit, 0))
	return append([]ConversationEntry(nil), es[from:end]...), n, nil
}
