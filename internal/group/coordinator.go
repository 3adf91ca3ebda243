package group

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator is the group coordinator of one broker: it owns every group and every
// committed offset. Create it with New, call Start (which replays Storage) before
// serving, and Close on shutdown.
type Coordinator struct {
	mu     sync.Mutex
	cfg    Config
	clock  Clock
	store  Storage
	topics Topics
	log    *slog.Logger

	groups map[string]*group
	// pendingTxn holds transactional offset commits written but not yet
	// decided, by producer id then group (txn_offsets.go).
	pendingTxn map[int64]map[string]map[topicPartition]committedOffset
	// seq numbers offset commits in log order (committedOffset.seq).
	seq int64
	// loaded holds the __consumer_offsets partitions whose groups this
	// coordinator has loaded (LoadPartition) and serves.
	loaded      map[int32]bool
	started     bool
	closed      bool
	expiryTimer Timer
	leads       func(p int32) bool // Options.Leads
	// shareRecs holds the share-group records the log has, by group
	// (share_records.go).
	shareRecs map[string]map[string][]byte
}

// Options configure a Coordinator.
type Options struct {
	Config Config
	// Clock defaults to SystemClock.
	Clock Clock
	// Storage is where records go; nil keeps everything in memory only.
	Storage Storage
	// Topics answers topic questions; nil means "no topic exists".
	Topics Topics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Leads, if set, reports whether this broker may act as the leader
	// of __consumer_offsets partition p right now: a loaded partition
	// whose leadership lapsed (the broker lost its session with the
	// controller) is answered NOT_COORDINATOR until it is unloaded or
	// the lease is renewed. It must not call the Coordinator.
	Leads func(p int32) bool
}

// Client identifies the connection a request came from.
type Client struct {
	ID   string // the request header's client id
	Host string // the peer address, as Kafka reports it ("/127.0.0.1")
}

// New creates a coordinator; it does nothing until Start.
func New(opts Options) *Coordinator {
	c := &Coordinator{
		cfg:    opts.Config.withDefaults(),
		clock:  opts.Clock,
		store:  opts.Storage,
		topics: opts.Topics,
		log:    opts.Logger,
		groups: make(map[string]*group),
		loaded: make(map[int32]bool),
		leads:  opts.Leads,

		pendingTxn: make(map[int64]map[string]map[topicPartition]committedOffset),
	}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.topics == nil {
		c.topics = noTopics{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// Config returns the effective configuration (defaults filled in).
func (c *Coordinator) Config() Config { return c.cfg }

// Start arms the offset expiry timer. The groups themselves are loaded one
// __consumer_offsets partition at a time, by LoadPartition, when this broker
// becomes that partition's leader.
func (c *Coordinator) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return nil
	}
	c.started = true
	c.scheduleExpiry()
	return nil
}

// LoadPartition replays one __consumer_offsets partition from Storage (this
// broker now leads it): its groups and committed offsets are served from now
// on. Groups loaded with members are Stable and their members must heartbeat
// within their session timeout, as after a coordinator fail-over in Kafka.
// Loading a loaded partition does nothing.
func (c *Coordinator) LoadPartition(p int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loadPartitionLocked(p)
}

// TryLoadPartition is LoadPartition when the coordinator's lock is free: it
// reports false and does nothing when the lock is held, as it is while a
// group's write waits for its in-sync replicas (up to the write timeout).
// A broker applying a metadata change loads this way so that the change is
// never held up behind a write that may need that very change to finish.
// It also returns the share-group records of the partition's groups once
// loaded (ShareRecordsIn), taken under the same lock.
func (c *Coordinator) TryLoadPartition(p int32) (bool, map[string]map[string][]byte, error) {
	if !c.mu.TryLock() {
		return false, nil, nil
	}
	defer c.mu.Unlock()
	if err := c.loadPartitionLocked(p); err != nil {
		return true, nil, err
	}
	return true, c.shareRecordsInLocked(p), nil
}

// TryUnloadPartition is UnloadPartition when the lock is free (see
// TryLoadPartition); false: nothing was done.
func (c *Coordinator) TryUnloadPartition(p int32) bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	c.unloadPartitionLocked(p)
	return true
}

func (c *Coordinator) loadPartitionLocked(p int32) error {
	if c.loaded[p] || c.closed {
		return nil
	}
	if c.store != nil {
		if err := c.replayPartition(p); err != nil {
			return fmt.Errorf("group: loading %s-%d: %w", OffsetsTopic, p, err)
		}
	}
	c.loaded[p] = true
	return nil
}

// UnloadPartition forgets the groups of one __consumer_offsets partition
// (its leadership moved away, or it is gone): their timers stop, pending
// JoinGroup and SyncGroup calls are answered NOT_COORDINATOR, and their
// state stays in the log for the next coordinator.
func (c *Coordinator) UnloadPartition(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unloadPartitionLocked(p)
}

func (c *Coordinator) unloadPartitionLocked(p int32) {
	if !c.loaded[p] {
		return
	}
	delete(c.loaded, p)
	for id, g := range c.groups {
		if PartitionFor(id, c.cfg.NumPartitions) != p {
			continue
		}
		g.abandon()
		delete(c.groups, id)
		for _, byGroup := range c.pendingTxn {
			delete(byGroup, id)
		}
	}
}

// notCoordinator reports whether this coordinator must answer
// NOT_COORDINATOR for group id: it is closed, or the group's partition of
// __consumer_offsets is not loaded here (another broker leads it, or this
// one has not finished loading it). Caller holds c.mu.
func (c *Coordinator) notCoordinator(id string) bool {
	p := PartitionFor(id, c.cfg.NumPartitions)
	return c.closed || !c.loaded[p] || c.leads != nil && !c.leads(p)
}

// Coordinates reports whether this node is group id's coordinator now (its
// __consumer_offsets partition loaded and led here). Share groups, kept
// apart from this coordinator, ask it.
func (c *Coordinator) Coordinates(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.notCoordinator(id)
}

// Loaded reports whether partition p of __consumer_offsets is loaded here.
func (c *Coordinator) Loaded(p int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loaded[p]
}

// Close stops every timer and answers pending JoinGroup/SyncGroup calls with
// NOT_COORDINATOR, as a Kafka coordinator that moves away does.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	stopTimer(c.expiryTimer)
	for _, g := range c.groups {
		g.abandon()
	}
}

// abandon stops g's timers and answers its pending JoinGroup and SyncGroup
// calls with NOT_COORDINATOR, as a Kafka coordinator that moves away does.
func (g *group) abandon() {
	g.stopTimers()
	for _, m := range g.members {
		if m.joinCB != nil {
			m.joinCB(joinError(m.joinVersion, kerr.NotCoordinator.Code, m.id))
			m.joinCB = nil
		}
		if m.syncCB != nil {
			m.syncCB(syncError(m.syncVersion, kerr.NotCoordinator.Code))
			m.syncCB = nil
		}
	}
	if g.consumer != nil {
		g.consumer.stopTimers()
	}
}

// Partitions is offsets.topic.num.partitions.
func (c *Coordinator) Partitions() int32 { return c.cfg.NumPartitions }

func (c *Coordinator) nowMs() int64 { return c.clock.Now().UnixMilli() }

// persist appends recs for group id to its __consumer_offsets partition.
func (c *Coordinator) persist(id string, recs ...record) error {
	if c.store == nil || len(recs) == 0 {
		return nil
	}
	p := PartitionFor(id, c.cfg.NumPartitions)
	if err := c.store.Append(p, encodeBatch(recs, c.nowMs())); err != nil {
		c.log.Error("group: writing __consumer_offsets", "group", id, "partition", p, "err", err)
		return err
	}
	return nil
}

// wait runs start (which must eventually call its callback exactly once) and waits for
// the response or ctx; it returns the zero value if ctx ends first.
func wait[T any](ctx context.Context, start func(func(T))) T {
	ch := make(chan T, 1)
	start(func(r T) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		var zero T
		return zero
	}
}

func newUUID() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

func uuidString(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func validGroupID(id string) bool { return id != "" }

func ms(d time.Duration) int32 { return int32(d / time.Millisecond) }

type noTopics struct{}

func (noTopics) Topic(string) (TopicInfo, bool)        { return TopicInfo{}, false }
func (noTopics) TopicByID([16]byte) (TopicInfo, bool)  { return TopicInfo{}, false }
func (noTopics) AllTopics() []TopicInfo                { return nil }
func (noTopics) EndOffset(string, int32) (int64, bool) { return 0, false }
