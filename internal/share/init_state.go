package share

import (
	"slices"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Share-partition state initialized by the group coordinator, as Kafka 4.4's
// GroupCoordinatorService does it: when a share group's members subscribe to
// a topic partition whose state the group has not initialized, the
// coordinator has the share coordinator initialize it (Options.InitState:
// InitializeShareGroupState with start offset -1, which the share-partition
// leader resolves with share.auto.offset.reset when it first loads the
// partition) before the partition is assigned, and records the partitions it
// initialized in the group's ShareGroupStatePartitionMetadata record (15,
// InitializedTopics), so that a restart or another coordinator knows them.
// Only initialized partitions are assigned. A partition whose initialization
// failed is left out of the assignment and tried again at the next
// heartbeat. AlterShareGroupOffsets initializes the partitions it sets;
// DeleteShareGroupOffsets uninitializes the ones it deletes.

// initTopic is one topic of a group's initialized partitions.
type initTopic struct {
	name  string
	parts map[int32]bool
}

// isInitializedLocked reports whether the group's state of k is initialized.
func (g *Group) isInitializedLocked(id [16]byte, p int32) bool {
	t := g.initialized[id]
	return t != nil && t.parts[p]
}

func (g *Group) markInitializedLocked(id [16]byte, name string, p int32) bool {
	if g.initialized == nil {
		g.initialized = map[[16]byte]*initTopic{}
	}
	t := g.initialized[id]
	if t == nil {
		t = &initTopic{name: name, parts: map[int32]bool{}}
		g.initialized[id] = t
	}
	if t.parts[p] {
		return false
	}
	t.parts[p] = true
	return true
}

// uninitializedLocked returns the partitions of the topics g's members
// subscribe to whose state g has not initialized; those this broker already
// holds (state read or set earlier) are marked initialized on the way.
func (m *Manager) uninitializedLocked(g *Group) (todo []Key, names map[[16]byte]string) {
	var topics []string
	for _, mb := range g.members {
		topics = append(topics, mb.topics...)
	}
	sort.Strings(topics)
	topics = slices.Compact(topics)
	for _, name := range topics {
		t, ok := m.topics.Topic(name)
		if !ok {
			continue
		}
		for p := int32(0); p < t.Partitions; p++ {
			if g.isInitializedLocked(t.ID, p) {
				continue
			}
			k := Key{Group: g.ID, TopicID: t.ID, Partition: p}
			if m.parts[k] != nil {
				g.markInitializedLocked(t.ID, name, p)
				continue
			}
			if names == nil {
				names = map[[16]byte]string{}
			}
			names[t.ID] = name
			todo = append(todo, k)
		}
	}
	return todo, names
}

// initializeLocked initializes the state of the partitions g's members
// subscribe to that g has not initialized yet. It releases m.mu while the
// share coordinator is asked and takes it again; it reports whether any
// partition became initialized (the assignable partitions changed).
func (m *Manager) initializeLocked(g *Group) bool {
	if m.initState == nil {
		return false
	}
	if todo, _ := m.uninitializedLocked(g); len(todo) == 0 {
		return false
	}
	// One initialization at a time per group (its initLocks entry, never
	// taken under m.mu): a concurrent heartbeat of the group must not
	// initialize (start offset -1) a partition another one initialized and a
	// member already fetched. Other groups' initializations go on meanwhile.
	m.mu.Unlock()
	unlock := m.initLocks.lock(g.ID)
	defer unlock()
	m.mu.Lock()
	todo, names := m.uninitializedLocked(g)
	if len(todo) == 0 {
		return false
	}
	epoch := g.Epoch
	m.mu.Unlock()
	done := m.initState(todo, epoch)
	m.mu.Lock()
	changed := false
	for _, k := range done {
		if g.markInitializedLocked(k.TopicID, names[k.TopicID], k.Partition) {
			changed = true
		}
	}
	return changed
}

// initLocks serializes the share-partition state initializations of each
// group. The lock is the group id's, not the Group's: the heartbeats of a
// group deleted and created again while one of them was initializing wait
// for it too.
type initLocks struct {
	mu    sync.Mutex
	locks map[string]*initLock
}

type initLock struct {
	mu   sync.Mutex
	refs int // heartbeats holding or waiting for mu
}

// lock takes group id's lock and returns its unlock; the entry goes when no
// heartbeat holds or waits for it.
func (l *initLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*initLock{}
	}
	e := l.locks[id]
	if e == nil {
		e = &initLock{}
		l.locks[id] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}

// assignableLocked reports whether partition p of topic id may be assigned
// in g: always without an initializer, else once its state is initialized.
func (m *Manager) assignableLocked(g *Group, id [16]byte, p int32) bool {
	return m.initState == nil || g.isInitializedLocked(id, p)
}

// markInitialized records that group's state of k is set (AlterShareGroupOffsets).
func (m *Manager) markInitialized(k Key) {
	m.mu.Lock()
	g := m.groups[k.Group]
	changed := false
	if g != nil {
		name := ""
		if t, ok := m.topics.TopicByID(k.TopicID); ok {
			name = t.Name
		}
		changed = g.markInitializedLocked(k.TopicID, name, k.Partition)
	}
	m.mu.Unlock()
	if changed {
		m.persistMembership(k.Group)
	}
}

// unmarkInitialized records that group's state of k is gone (DeleteShareGroupOffsets).
func (m *Manager) unmarkInitialized(k Key) {
	m.mu.Lock()
	changed := false
	if g := m.groups[k.Group]; g != nil {
		if t := g.initialized[k.TopicID]; t != nil && t.parts[k.Partition] {
			delete(t.parts, k.Partition)
			if len(t.parts) == 0 {
				delete(g.initialized, k.TopicID)
			}
			changed = true
		}
	}
	m.mu.Unlock()
	if changed {
		m.persistMembership(k.Group)
	}
}

// initializedKeysLocked lists g's initialized share partitions.
func initializedKeysLocked(g *Group) []Key {
	var out []Key
	for id, t := range g.initialized {
		for p := range t.parts {
			out = append(out, Key{Group: g.ID, TopicID: id, Partition: p})
		}
	}
	return out
}

// statePartitionMetadataValue encodes ShareGroupStatePartitionMetadataValue
// (record 15, version 0, flexible): no initializing topics, the initialized
// ones, no deleting ones.
func statePartitionMetadataValue(g *Group) []byte {
	v := valueHeader()
	v = kbin.AppendCompactArrayLen(v, 0) // InitializingTopics
	ids := make([][16]byte, 0, len(g.initialized))
	for id := range g.initialized {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	v = kbin.AppendCompactArrayLen(v, len(ids))
	for _, id := range ids {
		t := g.initialized[id]
		v = kbin.AppendUuid(v, id)
		v = kbin.AppendCompactString(v, t.name)
		ps := make([]int32, 0, len(t.parts))
		for p := range t.parts {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		v = kbin.AppendCompactArrayLen(v, len(ps))
		for _, p := range ps {
			v = kbin.AppendInt32(v, p)
		}
		v = appendTags0(v)
	}
	v = kbin.AppendCompactArrayLen(v, 0) // DeletingTopics
	return appendTags0(v)
}

// readStatePartitionMetadata decodes record 15 into g: the initialized
// topics (initializing ones were not confirmed: they are initialized again;
// deleting ones are not initialized).
func readStatePartitionMetadata(r *recReader, g *Group) {
	skipTopics := func(withPartitions bool) {
		n := r.n()
		for i := 0; i < n && r.Ok(); i++ {
			r.Uuid()
			r.CompactString()
			if withPartitions {
				np := r.n()
				for j := 0; j < np && r.Ok(); j++ {
					r.Int32()
				}
			}
			r.skipTags()
		}
	}
	skipTopics(true) // InitializingTopics
	n := r.n()
	for i := 0; i < n && r.Ok(); i++ {
		id := r.Uuid()
		name := r.CompactString()
		np := r.n()
		for j := 0; j < np && r.Ok(); j++ {
			g.markInitializedLocked(id, name, r.Int32())
		}
		r.skipTags()
	}
	skipTopics(false) // DeletingTopics
}

// InitializedPartitions lists the share partitions whose state group id
// initialized (DescribeShareGroupOffsets with null topics lists them, as
// Kafka does).
func (m *Manager) InitializedPartitions(id string) []Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[id]; g != nil {
		return initializedKeysLocked(g)
	}
	return nil
}
