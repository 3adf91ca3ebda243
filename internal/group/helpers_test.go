package group

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock fires timers only inside Advance, in deadline order.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, running every timer that comes due on the way, in
// deadline order (creation order for equal deadlines).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		idx := -1
		for i, t := range c.timers {
			if t.stopped || t.at.After(target) {
				continue
			}
			if idx < 0 || t.at.Before(c.timers[idx].at) {
				idx = i
			}
		}
		if idx < 0 {
			break
		}
		t := c.timers[idx]
		c.timers = append(c.timers[:idx], c.timers[idx+1:]...)
		t.stopped = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	live := c.timers[:0]
	for _, t := range c.timers {
		if !t.stopped {
			live = append(live, t)
		}
	}
	c.timers = live
	c.now = target
	c.mu.Unlock()
}

type fakeTopics struct {
	mu     sync.Mutex
	topics map[string]TopicInfo
	ends   map[topicPartition]int64
}

func newFakeTopics() *fakeTopics {
	return &fakeTopics{topics: make(map[string]TopicInfo), ends: make(map[topicPartition]int64)}
}

func (f *fakeTopics) add(name string, partitions int32) TopicInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var id [16]byte
	copy(id[:], name)
	id[15] = 1
	t := TopicInfo{Name: name, ID: id, Partitions: partitions}
	f.topics[name] = t
	return t
}

func (f *fakeTopics) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.topics, name)
}

func (f *fakeTopics) Topic(name string) (TopicInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	return t, ok
}

func (f *fakeTopics) TopicByID(id [16]byte) (TopicInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.topics {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}

func (f *fakeTopics) AllTopics() []TopicInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TopicInfo
	for _, t := range f.topics {
		out = append(out, t)
	}
	return out
}

func (f *fakeTopics) EndOffset(topic string, p int32) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.ends[topicPartition{topic, p}]
	return e, ok
}

// memStorage is an in-memory __consumer_offsets.
type memStorage struct {
	mu   sync.Mutex
	logs map[int32][][]byte
	fail bool
}

func newMemStorage() *memStorage { return &memStorage{logs: make(map[int32][][]byte)} }

func (s *memStorage) Append(p int32, batch []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("injected write failure")
	}
	s.logs[p] = append(s.logs[p], append([]byte(nil), batch...))
	return nil
}

func (s *memStorage) Replay(p int32, fn func([]byte) error) error {
	s.mu.Lock()
	batches := append([][]byte(nil), s.logs[p]...)
	s.mu.Unlock()
	for _, b := range batches {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStorage) records() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, bs := range s.logs {
		for _, b := range bs {
			_ = decodeBatches(b, func(_, _ []byte) { n++ })
		}
	}
	return n
}

type env struct {
	t      *testing.T
	clock  *fakeClock
	topics *fakeTopics
	store  *memStorage
	c      *Coordinator
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{t: t, clock: newFakeClock(), topics: newFakeTopics(), store: newMemStorage()}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = -1
	}
	e.c = New(Options{Config: cfg, Clock: e.clock, Storage: e.store, Topics: e.topics, Logger: slog.New(slog.DiscardHandler)})
	if err := e.c.Start(); err != nil {
		t.Fatal(err)
	}
	e.loadAll()
	t.Cleanup(e.c.Close)
	return e
}

// restart builds a fresh coordinator over the same storage, clock and topics.
func (e *env) restart(cfg Config) {
	e.t.Helper()
	e.c.Close()
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = -1
	}
	e.c = New(Options{Config: cfg, Clock: e.clock, Storage: e.store, Topics: e.topics, Logger: slog.New(slog.DiscardHandler)})
	if err := e.c.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.loadAll()
}

type pendingJoin struct {
	resp  *kmsg.JoinGroupResponse
	calls int
}

func (p *pendingJoin) done() bool { return p.calls > 0 }

var testClient = Client{ID: "cli", Host: "/127.0.0.1"}

func joinReq(group, memberID string, instance *string, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = memberID
	r.InstanceID = instance
	r.SessionTimeoutMillis = 10000
	r.RebalanceTimeoutMillis = 30000
	r.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte("meta-" + p)})
	}
	return r
}

func (e *env) join(req *kmsg.JoinGroupRequest) *pendingJoin {
	p := &pendingJoin{}
	e.c.joinGroup(testClient, req, func(r *kmsg.JoinGroupResponse) { p.resp = r; p.calls++ })
	return p
}

// joinNew does the KIP-394 two-step join and returns the pending second join.
func (e *env) joinNew(group string, instance *string, protocols ...string) *pendingJoin {
	e.t.Helper()
	if instance != nil {
		return e.join(joinReq(group, "", instance, protocols...))
	}
	first := e.join(joinReq(group, "", nil, protocols...))
	if !first.done() || first.resp.ErrorCode != 79 || first.resp.MemberID == "" {
		e.t.Fatalf("first join: want MEMBER_ID_REQUIRED with an id, got %+v", first.resp)
	}
	return e.join(joinReq(group, first.resp.MemberID, nil, protocols...))
}

type pendingSync struct {
	resp  *kmsg.SyncGroupResponse
	calls int
}

func (e *env) sync(group, memberID string, gen int32, assignments map[string]string) *pendingSync {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	for m, a := range assignments {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	p := &pendingSync{}
	e.c.syncGroup(r, func(x *kmsg.SyncGroupResponse) { p.resp = x; p.calls++ })
	return p
}

func (e *env) heartbeat(group, memberID string, gen int32, instance *string) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, memberID, gen, instance
	return e.c.Heartbeat(r).ErrorCode
}

func (e *env) state(group string) string {
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{group}
	return e.c.DescribeGroups(r).Groups[0].State
}

func strp(s string) *string { return &s }

func mustCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error code %d, want %d", what, got, want)
	}
}

// loadAll loads every __consumer_offsets partition, as a single broker leading
// all of them does at start.
func (e *env) loadAll() {
	e.t.Helper()
	for p := int32(0); p < e.c.Partitions(); p++ {
		if err := e.c.LoadPartition(p); err != nil {
			e.t.Fatal(err)
		}
	}
}
