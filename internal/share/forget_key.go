package share

// ForgetKey drops share partition k from memory, not its persisted state: a
// broker that does not lead k's topic partition keeps no copy after writing it
// (AlterShareGroupOffsets on the group coordinator), and the leader drops its
// copy when another broker replaced k's state, so that its next use reads the
// state from the share coordinator again.
func (m *Manager) ForgetKey(k Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parts, k)
}
