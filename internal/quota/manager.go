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
	mu       sync.Mutex
	rate     *Rate
	bucket   *TokenBucket
	lastUsed time.Time
	// throttled sums the throttle time handed out, for metrics.
	throttled time.Duration
}

// Manager holds the sensors of every client with a quota and computes
// their throttle times. Safe for concurrent use: the sensor map is read
// under a shared lock, each sensor has a lock of its own.
type Manager struct {
	w   Window
	now func() time.Time

	mu        sync.RWMutex
	sensors   map[sensorKey]*sensor
	lastSweep time.Time
}

// NewManager returns a manager sampling with w; now is the clock (nil:
// time.Now).
func NewManager(w Window, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{w: w.valid(), now: now, sensors: map[sensorKey]*sensor{}}
}

// Window returns the sampling of the manager's rates.
func (m *Manager) Window() Window { return m.w }

// Now returns the manager's clock.
func (m *Manager) Now() time.Time { return m.now() }

// sensor returns the sensor of k, locked; sensors unused for an hour are
// dropped once a minute.
func (m *Manager) sensor(k sensorKey, now time.Time) *sensor {
	m.mu.RLock()
	s, ok := m.sensors[k]
	sweep := now.Sub(m.lastSweep) > time.Minute
	m.mu.RUnlock()
	if !ok || sweep {
		m.mu.Lock()
		if now.Sub(m.lastSweep) > time.Minute {
			for key, old := range m.sensors {
				old.mu.Lock()
				idle := now.Sub(old.lastUsed) > sensorExpiry
				old.mu.Unlock()
				if idle {
					delete(m.sensors, key)
				}
			}
			m.lastSweep = now
		}
		if s, ok = m.sensors[k]; !ok {
			s = &sensor{}
			if k.kind == Mutation {
				s.bucket = NewTokenBucket(m.w)
			} else {
				s.rate = NewRate(m.w)
			}
			m.sensors[k] = s
		}
		m.mu.Unlock()
	}
	s.mu.Lock()
	s.lastUsed = now
	return s
}

// Record adds value to the client's sensor of kind and returns the
// throttle time the client has earned: zero within its quota (limit),
// else Kafka's throttle time (KIP-219). Kafka records the value even when
// it exceeds the quota.
func (m *Manager) Record(kind Kind, tags Tags, limit, value float64) time.Duration {
	now := m.now()
	s := m.sensor(sensorKey{kind, tags}, now)
	defer s.mu.Unlock()
	var d time.Duration
	if s.bucket != nil {
		s.bucket.Record(limit, value, now)
		d = s.bucket.Throttle(limit, now)
	} else {
		s.rate.Record(value, now)
		d = s.rate.Throttle(limit, now)
	}
	if kind == Request { // Kafka bounds the request quota's throttle by one window
		d = min(d, m.w.Size)
	}
	s.throttled += d
	return d
}

// Unrecord takes value back from the client's rate sensor of kind (Kafka's
// unrecordQuotaSensor): a consumer fetch answered without its records
// because it earned a throttle does not count against the quota.
func (m *Manager) Unrecord(kind Kind, tags Tags, value float64) {
	now := m.now()
	s := m.sensor(sensorKey{kind, tags}, now)
	defer s.mu.Unlock()
	if s.rate != nil {
		s.rate.Record(-value, now)
	}
}

// Check returns the throttle time of a client before it records anything:
// non-zero when it is over its quota already (Kafka's strict controller
// mutation quota refuses the mutation then).
func (m *Manager) Check(kind Kind, tags Tags, limit float64) time.Duration {
	now := m.now()
	s := m.sensor(sensorKey{kind, tags}, now)
	defer s.mu.Unlock()
	var d time.Duration
	if s.bucket != nil {
		d = s.bucket.Throttle(limit, now)
	} else {
		d = s.rate.Throttle(limit, now)
	}
	s.throttled += d
	return d
}

// ThrottleStat is the throttle time handed out to one sensor's clients.
type ThrottleStat struct {
	Kind  Kind
	Tags  Tags
	Total time.Duration
}

// Throttled returns the total throttle time per sensor that has throttled
// a client.
func (m *Manager) Throttled() []ThrottleStat {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []ThrottleStat
	for k, s := range m.sensors {
		s.mu.Lock()
		d := s.throttled
		s.mu.Unlock()
		if d > 0 {
			out = append(out, ThrottleStat{Kind: k.kind, Tags: k.tags, Total: d})
		}
	}
	return out
}
