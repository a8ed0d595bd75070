package browser

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"sync"
)

// Manager owns the controlled browsers, one per Company Session, each with its own profile
// directory under Root.
type Manager struct {
	// Root holds the profile directories (e.g. the data directory's "browser" folder).
	Root string
	// Base are the options every browser gets (ExecPath, TrustSPKI, Logger).
	Base Options

	mu       sync.Mutex
	sessions map[string]*Session
}

// ProfileDir is the profile directory of the Session named key (a hash, so no Company name or
// account appears in the file system).
func (m *Manager) ProfileDir(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(m.Root, "profile-"+hex.EncodeToString(sum[:8]))
}

// Get returns the browser of the Session named key, launching it with website and endpoint
// when it isn't running.
func (m *Manager) Get(key string, website []string, endpoint string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[key]; s != nil {
		return s, nil
	}
	o := m.Base
	o.ProfileDir = m.ProfileDir(key)
	s, err := Open(Config{Options: o, Website: website, Endpoint: endpoint})
	if err != nil {
		return nil, err
	}
	if m.sessions == nil {
		m.sessions = map[string]*Session{}
	}
	m.sessions[key] = s
	return s, nil
}

// Running returns the browser of key if it runs.
func (m *Manager) Running(key string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[key]
}

// Close stops every browser.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, s := range m.sessions {
		s.Close()
		delete(m.sessions, k)
	}
}
