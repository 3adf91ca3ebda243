package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Kafka error codes the session layer produces.
const (
	ErrFetchSessionIDNotFound    int16 = 70  // FETCH_SESSION_ID_NOT_FOUND
	ErrInvalidFetchSessionEpoch  int16 = 71  // INVALID_FETCH_SESSION_EPOCH
	ErrFetchSessionTopicIDError  int16 = 106 // FETCH_SESSION_TOPIC_ID_ERROR
	noError                      int16 = 0
	defaultSlots                       = 1000
	defaultEvictionMs                  = 120000
	initialEpoch, finalEpoch     int32 = 0, -1
	invalidSessionID, maxSession int32 = 0, 1<<31 - 1
)

// Key names one partition of a session. Requests from v13 on identify
// topics by id (TopicID set, Topic empty); older ones by name (Topic set,
// TopicID zero). A session never mixes the two.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// PartitionState is what the client asked for one partition.
type PartitionState struct {
	FetchOffset        int64
	LogStartOffset     int64 // followers only; -1 for consumers
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// entry is a session partition: the request state plus the last response
// state sent for it.
type entry struct {
	Key
	PartitionState
	highWatermark    int64
	lastStableOffset int64
	logStartOffset   int64
}

func newEntry(k Key, p PartitionState) *entry {
	return &entry{Key: k, PartitionState: p, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1}
}

// session is one cached fetch session. Its fields are guarded by mu; the
// cache's bookkeeping (lastUsed) by the cache's mutex.
type session struct {
	id           int32
	usesTopicIDs bool

	mu      sync.Mutex
	epoch   int32 // the epoch the next request must carry
	order   []*entry
	byKey   map[Key]*entry
	lastUse time.Time // guarded by Cache.mu
}

// Cache holds the broker's fetch sessions. Safe for concurrent use.
type Cache struct {
	mu         sync.Mutex
	slots      int
	evictionMs int64
	now        func() time.Time
	sessions   map[int32]*session
}

// Options configure a Cache. Zero values mean Kafka's defaults.
type Options struct {
	// Slots is max.incremental.fetch.session.cache.slots (1000). A negative
	// value disables sessions: every fetch is then sessionless.
	Slots int
	// EvictionMs is how long a session must be unused before a new session
	// may evict it regardless of size (Kafka's
	// min.incremental.fetch.session.eviction.ms, 120000).
	EvictionMs int64
	// Now is the clock (tests fake it).
	Now func() time.Time
}

// NewCache returns an empty session cache.
func NewCache(o Options) *Cache {
	if o.Slots == 0 {
		o.Slots = defaultSlots
	}
	if o.EvictionMs <= 0 {
		o.EvictionMs = defaultEvictionMs
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Cache{slots: o.Slots, evictionMs: o.EvictionMs, now: o.Now, sessions: make(map[int32]*session)}
}

// Len is the number of cached sessions.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

func (c *Cache) get(id int32) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s != nil {
		s.lastUse = c.now()
	}
	return s
}

func (c *Cache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, id)
}

// create caches s if there is room (evicting per Kafka's rules when full)
// and returns its id, or invalidSessionID when no session could be made.
func (c *Cache) create(s *session) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots < 0 {
		return invalidSessionID
	}
	now := c.now()
	if len(c.sessions) >= c.slots && !c.evictLocked(now, len(s.order)) {
		return invalidSessionID
	}
	for {
		id := rand.Int32N(maxSession) + 1
		if _, taken := c.sessions[id]; !taken {
			s.id = id
			break
		}
	}
	s.lastUse = now
	c.sessions[s.id] = s
	return s.id
}

// evictLocked frees one slot for a new session of size partitions: first
// the least recently used session idle for at least evictionMs; otherwise
// the smallest session (least recently used among equals) if the new one is
// larger. It reports whether a slot was freed.
func (c *Cache) evictLocked(now time.Time, size int) bool {
	var stale, small *session
	var smallSize int
	for _, s := range c.sessions {
		if now.Sub(s.lastUse) >= time.Duration(c.evictionMs)*time.Millisecond {
			if stale == nil || s.lastUse.Before(stale.lastUse) {
				stale = s
			}
		}
		s.mu.Lock()
		n := len(s.order)
		s.mu.Unlock()
		if small == nil || n < smallSize || (n == smallSize && s.lastUse.Before(small.lastUse)) {
			small, smallSize = s, n
		}
	}
	switch {
	case stale != nil:
		delete(c.sessions, stale.id)
	case small != nil && size > smallSize:
		delete(c.sessions, small.id)
	default:
		return false
	}
	return true
}
