package replica

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/tpindex"
)

// Event is a change of this broker's role for one partition.
type Event struct {
	Kind      EventKind
	Partition *Partition
}

// EventKind names what happened to a partition.
type EventKind uint8

const (
	// BecameLeader: this broker now leads the partition (or leads it under
	// a new epoch).
	BecameLeader EventKind = iota + 1
	// BecameFollower: this broker now follows the partition's leader (or
	// holds it without a role).
	BecameFollower
	// Removed: the partition is gone from this broker (topic deleted or
	// replica moved away); its log is about to be deleted or closed.
	Removed
)

func (k EventKind) String() string {
	switch k {
	case BecameLeader:
		return "became-leader"
	case BecameFollower:
		return "became-follower"
	case Removed:
		return "removed"
	}
	return "unknown"
}

// Listener hears partition events. It is called synchronously, in the
// order the changes are applied, with no lock of the Manager held; a
// coordinator loads (or unloads) its partition before it returns. An error
// (a coordinator that could not load its partition) is returned by the
// Apply that caused the event; the state is applied all the same.
type Listener func(Event) error

// Manager holds this broker's partitions and applies the metadata's
// decisions about them.
type Manager struct {
	self int32

	mu    sync.RWMutex
	parts tpindex.Index[Partition]
	// replicated holds the partitions of parts with more than one replica
	// (Replicated: the in-sync set loop never visits a single-replica
	// partition).
	replicated tpindex.Index[Partition]
	ckpt       *log.Offsets // checkpointed high watermarks (checkpoint.go)

	// applyMu serialises Apply/Remove so that listeners hear the changes
	// of one partition in order.
	applyMu   sync.Mutex
	listeners []Listener

	lease *leaseCheck // the broker's session with the controller (lease.go)
}

// NewManager returns an empty Manager for the broker with node id self.
func NewManager(self int32) *Manager {
	return &Manager{self: self, parts: tpindex.New[Partition](),
		replicated: tpindex.New[Partition](), lease: &leaseCheck{}}
}

// Self is this broker's node id.
func (m *Manager) Self() int32 { return m.self }

// Listen adds a listener; listeners registered before the first Apply hear
// every partition.
func (m *Manager) Listen(l Listener) {
	m.applyMu.Lock()
	m.listeners = append(m.listeners, l)
	m.applyMu.Unlock()
}

// Get returns the partition, or nil when this broker has no such partition.
func (m *Manager) Get(topic string, partition int32) *Partition {
	m.mu.RLock()
	p := m.parts.Get(topic, partition)
	m.mu.RUnlock()
	return p
}

// Partitions returns every local partition, sorted by topic and index.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	out := make([]*Partition, 0, m.parts.Len())
	m.parts.Sorted(func(_ string, _ int32, p *Partition) { out = append(out, p) })
	m.mu.RUnlock()
	return out
}

// Replicated returns the local partitions with more than one replica, in no
// particular order.
func (m *Manager) Replicated() []*Partition {
	m.mu.RLock()
	out := make([]*Partition, 0, m.replicated.Len())
	m.replicated.Each(func(p *Partition) { out = append(out, p) })
	m.mu.RUnlock()
	return out
}

// Apply installs st for the partition whose log is l (a new Partition the
// first time) and tells the listeners when this broker's role or the leader
// epoch changed. A state older than the current one (lower leader epoch or
// partition epoch) is refused: stale metadata never rolls a partition back.
func (m *Manager) Apply(l *log.Log, st State) (*Partition, error) {
	if err := validState(st); err != nil {
		return nil, fmt.Errorf("replica: %s-%d: %w", l.Topic(), l.Partition(), err)
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	tp := log.TopicPartition{Topic: l.Topic(), Partition: l.Partition()}
	m.mu.Lock()
	p := m.parts.Get(tp.Topic, tp.Partition)
	fresh := p == nil || p.log != l
	if fresh {
		p = &Partition{topic: tp.Topic, index: tp.Partition, self: m.self, log: l, lease: m.lease}
	} else if old := p.st.Load(); st.LeaderEpoch < old.LeaderEpoch ||
		st.LeaderEpoch == old.LeaderEpoch && st.PartitionEpoch < old.PartitionEpoch {
		m.mu.Unlock()
		return p, fmt.Errorf("replica: %s: stale state (leader epoch %d, partition epoch %d) after (%d, %d)",
			p, st.LeaderEpoch, st.PartitionEpoch, old.LeaderEpoch, old.PartitionEpoch)
	}
	var before *State
	if !fresh {
		before = p.st.Load()
	}
	st = State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch,
		Replicas: slices.Clone(st.Replicas), ISR: slices.Clone(st.ISR), MinISR: st.MinISR}
	p.st.Store(&st)
	m.parts.Set(tp.Topic, tp.Partition, p)
	if len(st.Replicas) > 1 {
		m.replicated.Set(tp.Topic, tp.Partition, p)
	} else {
		m.replicated.Remove(tp.Topic, tp.Partition)
	}
	m.mu.Unlock()

	role := roleOf(m.self, &st)
	changed := before == nil || roleOf(m.self, before) != role || before.LeaderEpoch != st.LeaderEpoch
	if fresh && (role == Follower || len(st.ISR) > 1) {
		// A replicated partition's high watermark is not known at start:
		// it comes back from the leader (follower) or the in-sync
		// replicas' fetches (leader).
		l.ForgetHighWatermark()
		if hw, ok := m.checkpointed(tp); ok {
			l.SetHighWatermark(hw)
		}
	}
	if changed && role == Leader {
		p.resetLeaderView(&st, time.Now())
	}
	p.applyHighWatermarkRule(&st)
	if changed {
		kind := BecameFollower
		if role == Leader {
			kind = BecameLeader
		}
		return p, m.emit(Event{Kind: kind, Partition: p})
	}
	return p, nil
}

// Remove drops the partition (its log is being deleted or closed) and tells
// the listeners. Removing an unknown partition does nothing.
func (m *Manager) Remove(topic string, partition int32) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	p := m.parts.Remove(tp.Topic, tp.Partition)
	m.replicated.Remove(tp.Topic, tp.Partition)
	m.mu.Unlock()
	if p != nil {
		// No role any more: waiting acks=all produces and later appends
		// through a Partition still held get NOT_LEADER_OR_FOLLOWER.
		old := p.st.Load()
		p.st.Store(&State{Leader: NoLeader, LeaderEpoch: old.LeaderEpoch, PartitionEpoch: old.PartitionEpoch})
		_ = m.emit(Event{Kind: Removed, Partition: p}) // unloading cannot fail
	}
}

func (m *Manager) emit(e Event) error {
	var first error
	for _, l := range m.listeners {
		if err := l(e); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// applyHighWatermarkRule sets how the high watermark moves under st: a
// leader whose in-sync set is itself alone advances it with every append
// (Kafka's rule, min over the in-sync set, with one member). Otherwise it
// stays where it is until it is set: by the leader from its followers' log
// end offsets, on a follower from the leader's fetch answers. While the
// in-sync set is below st.MinISR it does not move at all (underMinISR).
func (p *Partition) applyHighWatermarkRule(st *State) {
	if st.Leader == p.self && len(st.ISR) == 1 && st.ISR[0] == p.self && !underMinISR(st) {
		p.log.FollowLogEnd()
		return
	}
	p.log.FreezeHighWatermark()
	p.updateHighWatermark(st) // a smaller in-sync set may hold more
}

func validState(st State) error {
	if st.LeaderEpoch < 0 || st.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch in %+v", st)
	}
	if st.Leader != NoLeader && !slices.Contains(st.Replicas, st.Leader) {
		return fmt.Errorf("leader %d is not a replica %v", st.Leader, st.Replicas)
	}
	for _, r := range st.ISR {
		if !slices.Contains(st.Replicas, r) {
			return fmt.Errorf("in-sync replica %d is not a replica %v", r, st.Replicas)
		}
	}
	return nil
}

// Error is a partition-level refusal carrying its Kafka error code.
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// KafkaCode returns the error's Kafka error code.
func (e *Error) KafkaCode() int16 { return e.Code }

func notEnoughReplicas(p *Partition, have, want int) string {
	return fmt.Sprintf("the in-sync set of %s has %d replica(s), fewer than min.insync.replicas=%d", p, have, want)
}

func deleteOutOfRange(p *Partition, offset, hw int64) string {
	return fmt.Sprintf("cannot delete records of %s below offset %d: it is above the high watermark %d", p, offset, hw)
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
