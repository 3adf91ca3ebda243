package share

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config holds the share-group settings (Kafka's names in comments).
type Config struct {
	RecordLockDuration time.Duration // group.share.record.lock.duration.ms (30000)
	DeliveryCountLimit int           // group.share.delivery.count.limit (5)
	MaxRecordLocks     int           // group.share.partition.max.record.locks (2000)
	HeartbeatInterval  time.Duration // group.share.heartbeat.interval.ms (5000)
	SessionTimeout     time.Duration // group.share.session.timeout.ms (45000)
	MaxGroupSize       int           // group.share.max.size (200)
	AutoOffsetReset    string        // share.auto.offset.reset: latest (default) or earliest
	ReadCommitted      bool          // share.isolation.level=read_committed (a group config)
	RenewDisabled      bool          // share.renew.acknowledge.enable=false (a group config)
	// errors.deadletterqueue.topic.name and .copy.record.enable (group configs) and
	// where archived records go (dead_letter.go)
	DeadLetterTopic string
	DeadLetterCopy  bool
	OnDeadLetter    func(DeadLetter)
	// EvaluateGroupConfig, if set, turns a group's stored configs into the ones it
	// runs with (Kafka clamps them into the broker's current bounds)
	EvaluateGroupConfig func(map[string]string) map[string]string
}

func (c Config) withDefaults() Config {
	if c.RecordLockDuration <= 0 {
		c.RecordLockDuration = 30 * time.Second
	}
	if c.DeliveryCountLimit <= 0 {
		c.DeliveryCountLimit = 5
	}
	if c.MaxRecordLocks <= 0 {
		c.MaxRecordLocks = 2000
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = 200
	}
	if c.AutoOffsetReset != "earliest" {
		c.AutoOffsetReset = "latest"
	}
	return c
}

// TopicInfo is what the manager needs to know of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics looks topics up in the broker's registry.
type Topics interface {
	Topic(name string) (TopicInfo, bool)
	TopicByID(id [16]byte) (TopicInfo, bool)
}

// Store persists share-partition snapshots (the share-group state topic).
// A nil value deletes the state of k.
type Store interface {
	Write(k Key, value []byte) error
}

// Initializer is a Store that also replaces the state of a share partition
// (InitializeShareGroupState): ResetStart uses it, with a state epoch above
// the stored one, so that the share coordinator fences the writes of every
// copy of the old state (FENCED_STATE_EPOCH) instead of merging them into
// the new one. Without it ResetStart writes the new state with Write.
type Initializer interface {
	Initialize(k Key, stateEpoch int32, start int64) error
}

// Options configure a Manager.
type Options struct {
	Config Config
	Topics Topics
	Store  Store // nil: state is kept in memory only
	// ConfigStore persists group configs (nil: kept in memory only).
	ConfigStore ConfigStore
	// OtherGroup reports whether a group of another type (classic or
	// consumer) has the id; such ids cannot be share groups.
	OtherGroup func(id string) bool
	Now        func() time.Time // time.Now if nil
	// Read fetches the persisted state of a share partition this broker
	// starts to lead (the share coordinator's ReadShareGroupState); nil:
	// the state is only what Load replayed.
	Read func(k Key) (s Snapshot, found bool, err error)
	// InitState has the share coordinator initialize the state of share
	// partitions a group's members subscribe to (InitializeShareGroupState,
	// start offset -1, the group epoch as state epoch) and returns those
	// whose state is now initialized (init_state.go); nil: partitions are
	// assigned without it and get their state at their first fetch.
	InitState func(keys []Key, stateEpoch int32) []Key
	// Membership stores share-group membership in __consumer_offsets
	// (membership.go; nil: kept in memory only); Logf logs its failures.
	Membership MembershipStore
	Logf       func(format string, args ...any)
}

// Manager is the share-group coordinator and the share-partition state of
// this broker: membership and assignment (ShareGroupHeartbeat), share
// sessions (ShareFetch/ShareAcknowledge) and the state of every share
// partition it leads.
type Manager struct {
	cfg        Config
	topics     Topics
	store      Store
	otherGroup func(string) bool
	now        func() time.Time
	read       func(Key) (Snapshot, bool, error)
	initState  func([]Key, int32) []Key

	mu       sync.Mutex
	groups   map[string]*Group
	parts    map[Key]*Partition
	sessions map[sessionKey]*session
	// groupCfgs holds the group configs set per group (copy on write).
	groupCfgs map[string]map[string]string
	cfgStore  ConfigStore
	// persistMu orders snapshot writes with the state they capture.
	persistMu sync.Mutex
	// initLocks serializes each group's share-partition state
	// initializations (init_state.go).
	initLocks initLocks
	// membership.go
	members      MembershipStore
	memberWriter membershipWriter
	logf         func(format string, args ...any)
}

// New returns a manager.
func New(o Options) *Manager {
	m := &Manager{
		cfg:        o.Config.withDefaults(),
		topics:     o.Topics,
		store:      o.Store,
		cfgStore:   o.ConfigStore,
		otherGroup: o.OtherGroup,
		now:        o.Now,
		read:       o.Read,
		initState:  o.InitState,
		members:    o.Membership,
		logf:       o.Logf,
		groups:     map[string]*Group{},
		parts:      map[Key]*Partition{},
		sessions:   map[sessionKey]*session{},
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.otherGroup == nil {
		m.otherGroup = func(string) bool { return false }
	}
	if m.logf == nil {
		m.logf = func(string, ...any) {}
	}
	return m
}

// Config returns the effective configuration.
func (m *Manager) Config() Config { return m.cfg }

// Now returns the manager's clock.
func (m *Manager) Now() time.Time { return m.now() }

// Partition returns the state of share partition k, creating it with the
// start offset initStart() (share.auto.offset.reset) when it is new.
func (m *Manager) Partition(k Key, initStart func(reset string) int64) *Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.parts[k]
	if !ok {
		eff := m.effectiveLocked(k.Group)
		p = newPartition(k, initStart(eff.AutoOffsetReset), eff)
		m.parts[k] = p
		if m.groups[k.Group] == nil {
			m.groups[k.Group] = &Group{ID: k.Group, members: map[string]*member{}}
		}
	}
	return p
}

// Persist writes p's snapshot if what is persisted changed since the last
// write. The acknowledgement is answered only after it returns.
func (m *Manager) Persist(p *Partition) error {
	if m.store == nil {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	p.mu.Lock()
	s := p.snapshotLocked()
	enc := EncodeSnapshotValue(s)
	if bytes.Equal(enc, p.persisted) {
		p.mu.Unlock()
		return nil
	}
	p.epoch++
	now := m.now().UnixMilli()
	if p.created == 0 {
		p.created = now
	}
	s.SnapshotEpoch, s.CreateTimestamp, s.WriteTimestamp = p.epoch, p.created, now
	val := EncodeSnapshotValue(s)
	p.mu.Unlock()
	if err := m.store.Write(p.Key, val); err != nil {
		if errors.Is(err, kerr.FencedStateEpoch) {
			// The state was initialized again (AlterShareGroupOffsets) since
			// this copy read it: the copy is dropped, and the next use of the
			// share partition reads the new state (Prepare, Get), as Kafka's
			// SharePartitionManager drops a fenced share partition.
			m.mu.Lock()
			if m.parts[p.Key] == p {
				delete(m.parts, p.Key)
			}
			m.mu.Unlock()
		}
		return err
	}
	p.mu.Lock()
	p.persisted = enc
	p.mu.Unlock()
	return nil
}

// Load applies one record of the state topic (replay at start-up or when
// this broker becomes leader of a state partition). A nil value deletes.
func (m *Manager) Load(key, value []byte) error {
	k, ok, err := DecodeKey(key)
	if err != nil || !ok {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if value == nil {
		delete(m.parts, k)
		return nil
	}
	s, err := DecodeSnapshotValue(value)
	if err != nil {
		return err
	}
	p, ok := m.parts[k]
	if !ok {
		p = newPartition(k, 0, m.effectiveLocked(k.Group))
		m.parts[k] = p
	}
	p.restore(s)
	if m.groups[k.Group] == nil { // membership is not persisted: the group comes back empty
		m.groups[k.Group] = &Group{ID: k.Group, members: map[string]*member{}}
	}
	return nil
}

// ExpireAll releases expired acquisition locks of every share partition and
// persists what changed; members whose session timed out are removed, and
// the state of share partitions whose topic was deleted is deleted.
func (m *Manager) ExpireAll() {
	now := m.now()
	m.mu.Lock()
	var released []*Partition
	var changed []string
	for _, g := range m.groups {
		before := len(g.members)
		released = append(released, m.expireMembersLocked(g, now)...)
		if len(g.members) != before {
			changed = append(changed, g.ID)
		}
	}
	parts := make([]*Partition, 0, len(m.parts))
	var gone []Key
	for k, p := range m.parts {
		if _, ok := m.topics.TopicByID(k.TopicID); !ok {
			gone = append(gone, k)
			continue
		}
		parts = append(parts, p)
	}
	m.mu.Unlock()
	m.persistAll(released)
	m.persistMembership(changed...) // membership.go
	for _, k := range gone {
		_ = m.DeleteState(k)
	}
	for _, p := range parts {
		p.Expire(now)
		_ = m.Persist(p)
	}
}

// --- share sessions ----------------------------------------------------------

type sessionKey struct{ group, member string }

type session struct {
	next  int32 // the epoch the next request must carry
	parts []Key
}

// Session updates the share session of (group, member) for a request with
// epoch: 0 opens a new one (replacing any), -1 is the final request of the
// session (the caller closes it with CloseSession), any other value must be
// the next epoch. add and forget change its partitions. It returns the
// session's partitions or a Kafka error code.
func (m *Manager) Session(group, member string, epoch int32, add, forget []Key) ([]Key, int16) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sk := sessionKey{group, member}
	s := m.sessions[sk]
	switch {
	case epoch == 0:
		if s != nil {
			m.releaseSessionLocked(group, member, s)
		}
		s = &session{}
		m.sessions[sk] = s
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case epoch == -1:
	case epoch != s.next:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	if epoch != -1 {
		if s.next = epoch + 1; s.next == math.MaxInt32 || s.next <= 0 {
			s.next = 1
		}
	}
	for _, k := range forget {
		if i := slices.Index(s.parts, k); i >= 0 {
			s.parts = slices.Delete(s.parts, i, i+1)
		}
	}
	for _, k := range add {
		if !slices.Contains(s.parts, k) {
			s.parts = append(s.parts, k)
		}
	}
	return slices.Clone(s.parts), 0
}

// CloseSession ends the share session of (group, member), releasing every
// record the member still holds on its partitions.
func (m *Manager) CloseSession(group, member string) {
	m.mu.Lock()
	sk := sessionKey{group, member}
	s := m.sessions[sk]
	delete(m.sessions, sk)
	var ps []*Partition
	if s != nil {
		ps = m.sessionPartsLocked(s)
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.ReleaseMember(member)
		_ = m.Persist(p)
	}
}

func (m *Manager) sessionPartsLocked(s *session) []*Partition {
	var ps []*Partition
	for _, k := range s.parts {
		if p := m.parts[k]; p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// releaseSessionLocked releases the records of member on the partitions of
// s (a session replaced by a new one). The writes happen asynchronously of
// the lock order: snapshots are best effort here, the next write catches up.
func (m *Manager) releaseSessionLocked(group, member string, s *session) {
	for _, p := range m.sessionPartsLocked(s) {
		p.ReleaseMember(member)
	}
	_ = group
}

// releaseMemberLocked releases everything member holds in group's partitions
// and drops its session (the member left or was fenced).
func (m *Manager) releaseMemberLocked(group, member string) []*Partition {
	delete(m.sessions, sessionKey{group, member})
	var ps []*Partition
	for k, p := range m.parts {
		if k.Group == group {
			p.ReleaseMember(member)
			ps = append(ps, p)
		}
	}
	return ps
}

// GroupPartitions returns the share partitions of a group with state.
func (m *Manager) GroupPartitions(group string) []*Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []*Partition
	for k, p := range m.parts {
		if k.Group == group {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i].Key, ps[j].Key
		if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
			return c < 0
		}
		return a.Partition < b.Partition
	})
	return ps
}

// GroupState reports whether id is a share group and whether it has members.
func (m *Manager) GroupState(id string) (exists, empty bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	if g == nil {
		return false, true
	}
	m.expireMembersLocked(g, m.now())
	return true, len(g.members) == 0
}

// NotFoundMessage is Kafka's message for GROUP_ID_NOT_FOUND about id:
// another type of group has the id, or none does.
func (m *Manager) NotFoundMessage(id string) string {
	if m.otherGroup(id) {
		return "Group " + id + " is not a share group."
	}
	return "Group " + id + " not found."
}

// EnsureGroup creates share group id (empty) if it does not exist; it
// returns false if a group of another type has the id.
func (m *Manager) EnsureGroup(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups[id] != nil {
		return true
	}
	if m.otherGroup(id) {
		return false
	}
	m.groups[id] = &Group{ID: id, members: map[string]*member{}}
	return true
}

// Lookup returns the state of share partition k, or nil if it has none.
func (m *Manager) Lookup(k Key) *Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[k]
}

// ResetStart replaces the state of share partition k with an empty window
// starting at start (AlterShareGroupOffsets) and persists it. With an
// Initializer store the state is initialized with a state epoch above the
// stored one (read with Options.Read) and this broker's copy's, as Kafka's
// AlterShareGroupOffsets initializes it, so that a share-partition leader
// still holding the old state is fenced (FENCED_STATE_EPOCH) and reads the
// new state; batches of the old state past start are not kept.
func (m *Manager) ResetStart(k Key, start int64) error {
	in, ok := m.store.(Initializer)
	if !ok {
		return m.resetStartWrite(k, start)
	}
	m.mu.Lock()
	old := m.parts[k]
	m.mu.Unlock()
	epoch, snapEpoch, created := int32(1), int32(0), int64(0)
	if old != nil {
		old.mu.Lock()
		epoch = max(epoch, old.stateEpoch+1)
		snapEpoch, created = old.epoch, old.created
		old.mu.Unlock()
	}
	if m.read != nil {
		s, found, err := m.read(k)
		if err != nil {
			return err
		}
		if found {
			epoch = max(epoch, s.StateEpoch+1)
		}
	}
	if err := in.Initialize(k, epoch, start); err != nil {
		return err
	}
	m.mu.Lock()
	p := newPartition(k, start, m.effectiveLocked(k.Group))
	p.stateEpoch, p.epoch, p.created = epoch, snapEpoch, created
	p.persisted = EncodeSnapshotValue(p.snapshotLocked()) // what Initialize stored
	m.parts[k] = p
	m.mu.Unlock()
	m.markInitialized(k) // init_state.go
	return nil
}

// resetStartWrite is ResetStart with a store that only writes: the new
// state is written over the old one.
func (m *Manager) resetStartWrite(k Key, start int64) error {
	m.mu.Lock()
	p := newPartition(k, start, m.effectiveLocked(k.Group))
	if old := m.parts[k]; old != nil {
		old.mu.Lock()
		p.epoch, p.stateEpoch = old.epoch, old.stateEpoch
		old.mu.Unlock()
	}
	m.parts[k] = p
	m.mu.Unlock()
	if err := m.Persist(p); err != nil {
		return err
	}
	m.markInitialized(k) // init_state.go
	return nil
}

// DeleteState forgets share partition k and writes its tombstone
// (DeleteShareGroupOffsets). If the tombstone cannot be written, k's state is
// kept (unless it was recreated meanwhile), so that the deletion can be tried
// again.
func (m *Manager) DeleteState(k Key) error {
	m.mu.Lock()
	old, had := m.parts[k]
	delete(m.parts, k)
	m.mu.Unlock()
	defer m.unmarkInitialized(k) // init_state.go
	if !had && m.initState != nil {
		had = true // its state may be at the share coordinator (initialized, never fetched here)
	}
	if !had || m.store == nil {
		return nil
	}
	if err := m.store.Write(k, nil); err != nil {
		m.mu.Lock()
		if _, again := m.parts[k]; !again && old != nil {
			m.parts[k] = old
		}
		m.mu.Unlock()
		return err
	}
	return nil
}
