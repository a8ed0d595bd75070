package conversation

// Held reports how many conversations the Manager holds in memory (for tests).
func (m *Manager) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.convs)
}
