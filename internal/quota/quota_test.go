package quota

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func sp(s string) *string { return &s }

func TestResolvePrecedence(t *testing.T) {
	q := Quotas{}
	set := func(e Entity, v float64) { q[e.Key()] = map[string]float64{ProducerByteRate: v} }
	u, c, d := Named("alice"), Named("app"), DefaultPart()
	// Added from the lowest level up: each new one wins.
	steps := []struct {
		e    Entity
		tags Tags
	}{
		{Entity{ClientID: d}, Tags{ClientID: "app"}},
		{Entity{ClientID: c}, Tags{ClientID: "app"}},
		{Entity{User: d}, Tags{User: "alice"}},
		{Entity{User: d, ClientID: d}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: d, ClientID: c}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: u}, Tags{User: "alice"}},
		{Entity{User: u, ClientID: d}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: u, ClientID: c}, Tags{User: "alice", ClientID: "app"}},
	}
	if _, _, ok := q.Resolve(ProducerByteRate, "alice", "app"); ok {
		t.Fatal("no quota: resolved one")
	}
	for i, s := range steps {
		set(s.e, float64(i+1))
		v, tags, ok := q.Resolve(ProducerByteRate, "alice", "app")
		if !ok || v != float64(i+1) || tags != s.tags {
			t.Fatalf("level %d (%s): got %v %+v %v", 8-i, s.e, v, tags, ok)
		}
		if iv, itags, iok := NewIndex(q).Resolve(ProducerByteRate, "alice", "app"); iv != v || itags != tags || !iok {
			t.Fatalf("level %d (%s): the index resolves %v %+v %v", 8-i, s.e, iv, itags, iok)
		}
		if _, _, ok := q.Resolve(ConsumerByteRate, "alice", "app"); ok {
			t.Fatalf("another key resolved")
		}
	}
	// Another user with the same client id gets the default user's pair quota
	// (level 4: user=<default>, client-id=app), measured per pair.
	if v, tags, _ := q.Resolve(ProducerByteRate, "bob", "app"); v != 5 || tags != (Tags{User: "bob", ClientID: "app"}) {
		t.Fatalf("bob: %v %+v", v, tags)
	}
	if v, tags, _ := NewIndex(q).Resolve(ProducerByteRate, "bob", "app"); v != 5 || tags != (Tags{User: "bob", ClientID: "app"}) {
		t.Fatalf("bob (index): %v %+v", v, tags)
	}
	ipq := Quotas{Entity{IP: DefaultPart()}.Key(): {ConnectionCreationRate: 3}, Entity{IP: Named("10.0.0.1")}.Key(): {ConnectionCreationRate: 7}}
	for ip, want := range map[string]float64{"10.0.0.1": 7, "10.0.0.2": 3} {
		if v, ok := ipq.ResolveIP(ip); !ok || v != want {
			t.Fatalf("ResolveIP(%s) = %v", ip, v)
		}
		if v, ok := NewIndex(ipq).ResolveIP(ip); !ok || v != want {
			t.Fatalf("index ResolveIP(%s) = %v", ip, v)
		}
	}
}

func TestEntityKeysAndValidation(t *testing.T) {
	for _, comps := range [][]Component{
		{{Type: EntityUser, Name: sp("a/b c%<default>")}, {Type: EntityClientID}},
		{{Type: EntityClientID, Name: sp("x")}},
		{{Type: EntityIP, Name: sp("10.0.0.1")}},
		{{Type: EntityUser}},
	} {
		e, err := ParseEntity(comps)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseKey(e.Key())
		if err != nil || back != e {
			t.Fatalf("%s: key %q parsed back as %+v %v", e, e.Key(), back, err)
		}
	}
	for _, tc := range []struct {
		comps []Component
		msg   string
	}{
		{nil, "Invalid empty client quota entity"},
		{[]Component{{Type: "group", Name: sp("g")}}, "Unhandled client quota entity type: group"},
		{[]Component{{Type: EntityUser, Name: sp("a")}, {Type: EntityUser}}, "duplicate entity entry user"},
		{[]Component{{Type: EntityUser, Name: sp("")}}, "Empty user not supported"},
		{[]Component{{Type: EntityIP}, {Type: EntityUser}}, "IP entity should not be combined"},
		{[]Component{{Type: EntityIP, Name: sp("not-an-ip")}}, "not-an-ip is not a valid IP"},
	} {
		if _, err := ParseEntity(tc.comps); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %q", tc.comps, err, tc.msg)
		}
	}
	user := Entity{User: Named("u")}
	ip := Entity{IP: DefaultPart()}
	for _, tc := range []struct {
		e   Entity
		key string
		v   float64
		msg string
	}{
		{user, ProducerByteRate, 1024, ""},
		{user, RequestPercentage, 12.5, ""},
		{user, ControllerMutationRate, 0.5, ""},
		{user, "producer_byte_rat", 1, "Invalid configuration key producer_byte_rat"},
		{user, ConnectionCreationRate, 1, "Invalid configuration key connection_creation_rate"},
		{ip, ProducerByteRate, 1, "Invalid configuration key producer_byte_rate"},
		{ip, ConnectionCreationRate, 5, ""},
		{user, ProducerByteRate, 0, "Quota producer_byte_rate must be greater than 0"},
		{user, ProducerByteRate, 1.5, "producer_byte_rate cannot be a fractional value."},
		{ip, ConnectionCreationRate, 1e12, "too large for an INT"},
	} {
		err := ValidateValue(tc.e, tc.key, tc.v)
		if (tc.msg == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s %s=%v: %v, want %q", tc.e, tc.key, tc.v, err, tc.msg)
		}
	}
}

// clock is a manual clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Unix(1_700_000_000, 0)} }
func approx(a, b time.Duration) bool { return a-b < 2*time.Millisecond && b-a < 2*time.Millisecond }
func (c *clock) String() string      { return c.t.String() }

var _ = (*clock).String

func TestRateThrottle(t *testing.T) {
	c := newClock()
	m := NewManager(DefaultWindow, c.now)
	tags := Tags{ClientID: "p"}
	// A first burst is measured over (samples-1) windows: 1000 bytes at a
	// 50 B/s quota is 100 B/s over 10 s, twice the quota: throttled for
	// (100-50)/50 × 10 s.
	if d := m.Record(Produce, tags, 50, 1000); !approx(d, 10*time.Second) {
		t.Fatalf("first burst: throttle %v", d)
	}
	// Within the quota: nothing.
	m2 := NewManager(DefaultWindow, c.now)
	if d := m2.Record(Produce, tags, 200, 1000); d != 0 {
		t.Fatalf("within quota: throttle %v", d)
	}
	// As in Kafka, the padded first window means the burst still counts
	// after the throttle time; once all 11 windows have passed it is gone.
	c.add(10 * time.Second)
	if d := m.Record(Produce, tags, 50, 0); d <= 0 {
		t.Fatalf("10 s after the burst: throttle %v", d)
	}
	c.add(11 * time.Second)
	if d := m.Record(Produce, tags, 50, 0); d != 0 {
		t.Fatalf("21 s after the burst: throttle %v", d)
	}
	// Sustained: a producer that sends 100 B every 100 ms (1000 B/s) against
	// 500 B/s is throttled, by the precise window: after 20 s of it the
	// rate is measured over the full 11 windows.
	m3 := NewManager(DefaultWindow, c.now)
	var d time.Duration
	for i := 0; i < 200; i++ {
		d = m3.Record(Produce, tags, 500, 100)
		c.add(100 * time.Millisecond)
	}
	if d <= 0 {
		t.Fatal("sustained overrun not throttled")
	}
	c.add(-100 * time.Millisecond)
	r := m3.sensors[sensorKey{Produce, tags}].rate
	ws := r.WindowSize(c.now())
	if ws < 10*time.Second || ws > 11*time.Second {
		t.Fatalf("window size %v", ws)
	}
	want := (r.Measure(c.now()) - 500) / 500 * float64(ws.Milliseconds())
	if !approx(d, time.Duration(want)*time.Millisecond) {
		t.Fatalf("throttle %v, want %vms", d, want)
	}
	// Samples older than the whole window are forgotten.
	c.add(12 * time.Second)
	if v := r.Measure(c.now()); v != 0 {
		t.Fatalf("rate after 12 s idle: %v", v)
	}
	if len(m3.Throttled()) != 1 || m3.Throttled()[0].Total <= 0 {
		t.Fatalf("throttled stats: %+v", m3.Throttled())
	}
}

func TestRequestThrottleBoundedByWindow(t *testing.T) {
	c := newClock()
	m := NewManager(DefaultWindow, c.now)
	// 500 %-seconds of handler time against 1 %: Kafka's formula gives
	// hours, the request quota gives at most one window.
	if d := m.Record(Request, Tags{User: "u"}, 1, 500); d != time.Second {
		t.Fatalf("request throttle %v, want one window", d)
	}
	if d := m.Record(Produce, Tags{User: "u"}, 1, 500); d <= time.Second {
		t.Fatalf("byte-rate throttle %v is not bounded", d)
	}
}

func TestTokenBucket(t *testing.T) {
	c := newClock()
	m := NewManager(DefaultWindow, c.now)
	tags := Tags{User: "u"}
	// Rate 1/s: a burst of 11 mutations is free.
	if d := m.Check(Mutation, tags, 1); d != 0 {
		t.Fatalf("empty bucket check: %v", d)
	}
	if d := m.Record(Mutation, tags, 1, 11); d != 0 {
		t.Fatalf("burst: %v", d)
	}
	// Four more: four seconds' debt.
	if d := m.Record(Mutation, tags, 1, 4); !approx(d, 4*time.Second) {
		t.Fatalf("debt: %v", d)
	}
	c.add(1500 * time.Millisecond)
	if d := m.Check(Mutation, tags, 1); !approx(d, 2500*time.Millisecond) {
		t.Fatalf("after 1.5 s: %v", d)
	}
	c.add(2500 * time.Millisecond)
	if d := m.Check(Mutation, tags, 1); d != 0 {
		t.Fatalf("paid back: %v", d)
	}
}

func BenchmarkResolve(b *testing.B) {
	q := Quotas{}
	for i := 0; i < 100; i++ {
		q[Entity{ClientID: Named(fmt.Sprint("c", i))}.Key()] = map[string]float64{ProducerByteRate: 1024}
	}
	q[Entity{User: DefaultPart()}.Key()] = map[string]float64{RequestPercentage: 50}
	ix := NewIndex(q)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ix.Resolve(ProducerByteRate, "alice", "c7")
	}
}

func TestManagerConcurrent(t *testing.T) {
	c := newClock()
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return c.now() }
	m := NewManager(DefaultWindow, now)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				m.Record(Produce, Tags{ClientID: "shared"}, 1e9, 1)
				m.Record(Fetch, Tags{ClientID: fmt.Sprint("own-", g)}, 1e9, 1)
			}
		}()
	}
	wg.Wait()
	s := m.sensors[sensorKey{Produce, Tags{ClientID: "shared"}}]
	if got := s.rate.Measure(c.now()) * s.rate.WindowSize(c.now()).Seconds(); got != 8000 {
		t.Fatalf("shared sensor holds %v, want 8000", got)
	}
	if len(m.sensors) != 9 {
		t.Fatalf("%d sensors", len(m.sensors))
	}
}

// A value taken back (a consumer fetch answered without its records) no
// longer counts: the client is within its quota again.
func TestUnrecord(t *testing.T) {
	c := newClock()
	m := NewManager(DefaultWindow, c.now)
	tags := Tags{ClientID: "c"}
	if d := m.Record(Fetch, tags, 50, 400); d != 0 {
		t.Fatalf("400 B at 50 B/s over 10 s: throttle %v", d)
	}
	if d := m.Record(Fetch, tags, 50, 600); d <= 0 {
		t.Fatalf("1000 B at 50 B/s over 10 s: throttle %v", d)
	}
	m.Unrecord(Fetch, tags, 600)
	if d := m.Check(Fetch, tags, 50); d != 0 {
		t.Fatalf("after taking 600 B back: throttle %v", d)
	}
}
