package share

import "errors"

// Prepare makes sure share partition k is in memory before it is used: a
// share partition this broker does not hold yet is read from the share
// coordinator (Options.Read) and, if the coordinator has no state for it,
// starts at initStart (share.auto.offset.reset). An error (the coordinator
// cannot be reached) leaves k unknown, so that the next request tries again.
func (m *Manager) Prepare(k Key, initStart func(reset string) int64) error {
	m.mu.Lock()
	_, ok := m.parts[k]
	m.mu.Unlock()
	if ok || m.read == nil {
		return nil
	}
	s, found, err := m.read(k)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.parts[k]; ok {
		return nil
	}
	eff := m.effectiveLocked(k.Group)
	var p *Partition
	if found && s.StartOffset >= 0 {
		p = newPartition(k, 0, eff)
		p.restore(s)
	} else {
		// No state, or state initialized by the group coordinator with start
		// offset -1 (init_state.go): share.auto.offset.reset now, as Kafka's
		// share-partition leader resolves it when it first loads the partition.
		p = newPartition(k, initStart(eff.AutoOffsetReset), eff)
	}
	// The copy writes the state epoch it read (the group coordinator's for
	// state it initialized), so that its writes are not fenced. New state, and
	// state of an earlier Sluice, have 0, which is not fenced
	// (Coordinator.Write): the copy writes 1, which the coordinator records,
	// so that it is fenced once the state is initialized again.
	p.stateEpoch = max(s.StateEpoch, 1)
	m.parts[k] = p
	if m.groups[k.Group] == nil {
		m.groups[k.Group] = &Group{ID: k.Group, members: map[string]*member{}}
	}
	return nil
}

// Get returns share partition k, read from the share coordinator first
// (Prepare) if it is not in memory. Unlike Partition it never starts a share
// partition that Options.Read did not read: a copy dropped meanwhile (its
// write fenced with FENCED_STATE_EPOCH, its topic partition's leadership
// moved) is read again, not started afresh at share.auto.offset.reset over
// the state the coordinator holds. Without Options.Read it is Partition.
func (m *Manager) Get(k Key, initStart func(reset string) int64) (*Partition, error) {
	if m.read == nil {
		return m.Partition(k, initStart), nil
	}
	for range 3 {
		if err := m.Prepare(k, initStart); err != nil {
			return nil, err
		}
		if p := m.Lookup(k); p != nil {
			return p, nil
		}
	}
	return nil, errDroppedWhileRead
}

// errDroppedWhileRead: Get read a share partition three times, and each time
// it was dropped again before it could be used.
var errDroppedWhileRead = errors.New("share: the share partition was dropped while it was read")

// Restore installs a snapshot held by the local share coordinator (replay
// at start-up on a single node); a share partition already in memory, whose
// state is newer (records acquired since), is kept.
func (m *Manager) Restore(s Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := s.Key
	if _, ok := m.parts[k]; !ok && s.StartOffset >= 0 { // -1: resolved at the first fetch (Prepare)
		p := newPartition(k, 0, m.effectiveLocked(k.Group))
		p.restore(s)
		m.parts[k] = p
	}
	if m.groups[k.Group] == nil { // membership is not persisted: the group comes back empty
		m.groups[k.Group] = &Group{ID: k.Group, members: map[string]*member{}}
	}
}

// Forget drops the in-memory state of every share partition of a topic
// partition this broker no longer leads; its new leader reads the persisted
// state from the share coordinator, and so does this broker if it leads the
// partition again.
func (m *Manager) Forget(topicID [16]byte, partition int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if k.TopicID == topicID && k.Partition == partition {
			delete(m.parts, k)
		}
	}
}
