package quota

import (
	"sync"
	"time"
)

// Kind is what a sensor measures.
type Kind string

// The quota kinds, one per key.
const (
	Produce  Kind = "produce"  // producer_byte_rate: bytes produced
	Fetch    Kind = "fetch"    // consumer_byte_rate: bytes fetched
	Request  Kind = "request"  // request_percentage: % of one thread's time
	Mutation Kind = "mutation" // controller_mutation_rate: partitions created/deleted
)

// KeyOf returns the quota key of a kind.
func KeyOf(k Kind) string {
	switch k {
	case Produce:
		return ProducerByteRate
	case Fetch:
		return ConsumerByteRate
	case Request:
		return RequestPercentage
	case Mutation:
		return ControllerMutationRate
	}
	return ""
}

// sensorExpiry is how long an unused sensor is kept (Kafka: one hour).
const sensorExpiry = time.Hour

type sensorKey struct {
	kind Kind
	tags Tags
}

type sensor struct {
	rate     *Rate
	bucket   *TokenBucket
	lastUsed time.Time
}

// Manager holds the sensors of every client with a quota and computes
// their throttle times. Safe for concurrent use.
type Manager struct {
	w   Window
	now func() time.Time

	mu        sync.Mutex
	sensors   map[sensorKey]*sensor
	lastSweep time.Time
	// throttled sums the throttle time handed out per sensor, for metrics.
	throttled map[sensorKey]time.Duration
}

// NewManager returns a manager sampling with w; now is the clock (nil:
// time.Now).
func NewManager(w Window, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{w: w.valid(), now: now, sensors: map[sensorKey]*sensor{}, throttled: map[sensorKey]time.Duration{}}
}

// Window returns the sampling of the manager's rates.
func (m *Manager) Window() Window { return m.w }

// Now returns the manager's clock.
func (m *Manager) Now() time.Time { return m.now() }

func (m *Manager) sensor(k sensorKey, now time.Time) *sensor {
	if now.Sub(m.lastSweep) > time.Minute {
		for key, s := range m.sensors {
			if now.Sub(s.lastUsed) > sensorExpiry {
				delete(m.sensors, key)
				delete(m.throttled, key)
			}
		}
		m.lastSweep = now
	}
	s, ok := m.sensors[k]
	if !ok {
		s = &sensor{}
		if k.kind == Mutation {
			s.bucket = NewTokenBucket(m.w)
		} else {
			s.rate = NewRate(m.w)
		}
		m.sensors[k] = s
	}
	s.lastUsed = now
	return s
}

// Record adds value to the client's sensor of kind and returns the
// throttle time the client has earned: zero within its quota (limit),
// else Kafka's throttle time (KIP-219). Kafka records the value even when
// it exceeds the quota.
func (m *Manager) Record(kind Kind, tags Tags, limit, value float64) time.Duration {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := sensorKey{kind, tags}
	s := m.sensor(k, now)
	var d time.Duration
	if s.bucket != nil {
		s.bucket.Record(limit, value, now)
		d = s.bucket.Throttle(limit, now)
	} else {
		s.rate.Record(value, now)
		d = s.rate.Throttle(limit, now)
	}
	if d > 0 {
		m.throttled[k] += d
	}
	return d
}

// Check returns the throttle time of a client before it records anything:
// non-zero when it is over its quota already (Kafka's strict controller
// mutation quota refuses the mutation then).
func (m *Manager) Check(kind Kind, tags Tags, limit float64) time.Duration {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := sensorKey{kind, tags}
	s := m.sensor(k, now)
	var d time.Duration
	if s.bucket != nil {
		d = s.bucket.Throttle(limit, now)
	} else {
		d = s.rate.Throttle(limit, now)
	}
	if d > 0 {
		m.throttled[k] += d
	}
	return d
}

// ThrottleStat is the throttle time handed out to one sensor's clients.
type ThrottleStat struct {
	Kind  Kind
	Tags  Tags
	Total time.Duration
}

// Throttled returns the total throttle time per sensor so far.
func (m *Manager) Throttled() []ThrottleStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ThrottleStat, 0, len(m.throttled))
	for k, d := range m.throttled {
		out = append(out, ThrottleStat{Kind: k.kind, Tags: k.tags, Total: d})
	}
	return out
}
