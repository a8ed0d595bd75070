package engine

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sync"
	"time"
)

// MemoryState is an in-memory [State] for tests of the engine and of the packages that call it
// (the app wires the SQLite vault.State instead). Safe for concurrent use.
type MemoryState struct {
	mu        sync.Mutex
	settings  map[string]string
	cache     map[string]CacheRecord
	companies map[string]CompanyRecord
	sessions  map[string]SessionRecord
	sidOrder  []string
	exchanges []ExchangeRecord
}

// NewMemoryState returns an empty MemoryState.
func NewMemoryState() *MemoryState {
	return &MemoryState{settings: map[string]string{}, cache: map[string]CacheRecord{},
		companies: map[string]CompanyRecord{}, sessions: map[string]SessionRecord{}}
}

// GetSetting implements [Settings].
func (m *MemoryState) GetSetting(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.settings[key]
	if !ok {
		return "", fmt.Errorf("setting %q is not set: %w", key, fs.ErrNotExist)
	}
	return v, nil
}

// SetSetting implements [Settings].
func (m *MemoryState) SetSetting(_ context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settings[key] = value
	return nil
}

// GetCacheEntry implements [State].
func (m *MemoryState) GetCacheEntry(_ context.Context, url string) (CacheRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cache[url]
	if !ok {
		return CacheRecord{URL: url}, fmt.Errorf("no cached response for %s: %w", url, fs.ErrNotExist)
	}
	e.Body = slices.Clone(e.Body)
	return e, nil
}

// PutCacheEntry implements [State].
func (m *MemoryState) PutCacheEntry(_ context.Context, e CacheRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.Body = slices.Clone(e.Body)
	m.cache[e.URL] = e
	return nil
}

// DeleteCacheEntry implements [State].
func (m *MemoryState) DeleteCacheEntry(_ context.Context, url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cache, url)
	return nil
}

// PutCompany implements [State].
func (m *MemoryState) PutCompany(_ context.Context, c CompanyRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.Document = slices.Clone(c.Document)
	m.companies[c.Identifier] = c
	return nil
}

// GetCompany implements [State].
func (m *MemoryState) GetCompany(_ context.Context, identifier string) (CompanyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.companies[identifier]
	if !ok {
		return c, fmt.Errorf("company %s is not known: %w", identifier, fs.ErrNotExist)
	}
	c.Document = slices.Clone(c.Document)
	return c, nil
}

// AddSession implements [State]; a used sid fails with fs.ErrExist (sids are never reused).
func (m *MemoryState) AddSession(_ context.Context, s SessionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.SID]; ok {
		return fmt.Errorf("session id %q was already used: %w", s.SID, fs.ErrExist)
	}
	s.Extensions = slices.Clone(s.Extensions)
	m.sessions[s.SID] = s
	m.sidOrder = append(m.sidOrder, s.SID)
	return nil
}

// EndSession implements [State].
func (m *MemoryState) EndSession(_ context.Context, sid string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sid]
	if !ok {
		return fmt.Errorf("session %q is not known: %w", sid, fs.ErrNotExist)
	}
	s.Ended = at
	m.sessions[sid] = s
	return nil
}

// AddExchange implements [State].
func (m *MemoryState) AddExchange(_ context.Context, e ExchangeRecord) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.ID = int64(len(m.exchanges) + 1)
	m.exchanges = append(m.exchanges, e)
	return e.ID, nil
}

// Sessions returns every recorded Session in the order they were added.
func (m *MemoryState) Sessions() []SessionRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]SessionRecord, 0, len(m.sidOrder))
	for _, sid := range m.sidOrder {
		out = append(out, m.sessions[sid])
	}
	return out
}

// Exchanges returns every recorded exchange, oldest first.
func (m *MemoryState) Exchanges() []ExchangeRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ExchangeRecord, len(m.exchanges))
	for i, e := range m.exchanges {
		e.RequestHeaders, e.ResponseHeaders = http.Header(e.RequestHeaders).Clone(), http.Header(e.ResponseHeaders).Clone()
		out[i] = e
	}
	return out
}
