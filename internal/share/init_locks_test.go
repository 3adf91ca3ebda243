package share

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// oneTopic is a Topics of one topic.
type oneTopic TopicInfo

func (o oneTopic) Topic(name string) (TopicInfo, bool) { return TopicInfo(o), name == o.Name }
func (o oneTopic) TopicByID(id [16]byte) (TopicInfo, bool) {
	return TopicInfo(o), id == o.ID
}

// The share-partition state initializations are serialized per group: one
// of group a blocked at the share coordinator does not hold up group b's,
// while a second heartbeat of group a waits for the first one and then
// initializes nothing again.
func TestInitStateSerializedPerGroup(t *testing.T) {
	entered := make(chan string, 8)
	release := make(chan struct{})
	var mu sync.Mutex
	calls := map[string]int{}
	m := New(Options{
		Topics: oneTopic{Name: "t", ID: [16]byte{1}, Partitions: 2},
		InitState: func(keys []Key, _ int32) []Key {
			g := keys[0].Group
			mu.Lock()
			calls[g]++
			mu.Unlock()
			entered <- g
			if g == "a" {
				<-release
			}
			return keys
		},
	})
	join := func(group, member string) chan *kmsg.ShareGroupHeartbeatResponse {
		out := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
		go func() {
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.GroupID, req.MemberID, req.SubscribedTopicNames = group, member, []string{"t"}
			out <- m.Heartbeat(req, Client{ID: "c", Host: "h"})
		}()
		return out
	}
	recv := func(what string, ch chan *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no response in 10 s", what)
			return nil
		}
	}
	assigned := func(r *kmsg.ShareGroupHeartbeatResponse) int {
		n := 0
		if r.Assignment != nil {
			for _, tp := range r.Assignment.TopicPartitions {
				n += len(tp.Partitions)
			}
		}
		return n
	}

	a1 := join("a", "m1")
	select {
	case g := <-entered:
		if g != "a" {
			t.Fatalf("initialization of %s, want a", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("group a's initialization did not start")
	}
	// A second member of a joins: its heartbeat waits for a1's initialization.
	a2 := join("a", "m2")
	waitSecondInitializer(t, m, "a")
	// Group b is initialized and assigned while a's initialization is blocked.
	if r := recv("group b's join", join("b", "m1")); r.ErrorCode != 0 || assigned(r) != 2 {
		t.Fatalf("group b's join while a initializes: error %d, %d partitions assigned, want 2", r.ErrorCode, assigned(r))
	}
	close(release)
	r1, r2 := recv("a1", a1), recv("a2", a2)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || assigned(r2) == 0 {
		t.Fatalf("group a: errors %d %d, m2 assigned %d partitions", r1.ErrorCode, r2.ErrorCode, assigned(r2))
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["a"] != 1 || calls["b"] != 1 {
		t.Fatalf("initializations: %v, want one per group", calls)
	}
	m.initLocks.mu.Lock()
	defer m.initLocks.mu.Unlock()
	if len(m.initLocks.locks) != 0 {
		t.Fatalf("%d group locks left after the initializations", len(m.initLocks.locks))
	}
}

// A heartbeat that waited for another heartbeat's initialization of the
// same member (the client gave up on the first one and sent it again) and
// comes back with an epoch other than the one it was sent with carries the
// member's assignment: a member never learns a new epoch without it, or it
// would heartbeat on at that epoch with nothing assigned.
func TestInitStateWaitedHeartbeatCarriesAssignment(t *testing.T) {
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	var mu sync.Mutex
	available := false
	m := New(Options{
		Topics: oneTopic{Name: "t", ID: [16]byte{1}, Partitions: 2},
		InitState: func(keys []Key, _ int32) []Key {
			mu.Lock()
			ok := available
			mu.Unlock()
			if !ok {
				return nil // share coordinator not available yet
			}
			entered <- struct{}{}
			<-release
			return keys
		},
	})
	beat := func(epoch int32) chan *kmsg.ShareGroupHeartbeatResponse {
		out := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
		go func() {
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.GroupID, req.MemberID, req.MemberEpoch = "g", "m1", epoch
			if epoch == 0 {
				req.SubscribedTopicNames = []string{"t"}
			}
			out <- m.Heartbeat(req, Client{ID: "c", Host: "h"})
		}()
		return out
	}
	recv := func(ch chan *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no heartbeat response in 10 s")
			return nil
		}
	}
	first := recv(beat(0))
	if first.ErrorCode != 0 || first.Assignment == nil || len(first.Assignment.TopicPartitions) != 0 {
		t.Fatalf("join with the share coordinator unavailable: %+v", first)
	}
	e0 := first.MemberEpoch
	mu.Lock()
	available = true
	mu.Unlock()
	lost := beat(e0) // its response is lost: the client times out
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the initialization did not start")
	}
	again := beat(e0) // sent again at the same epoch, waits for the first
	waitSecondInitializer(t, m, "g")
	close(release)
	recv(lost)
	r := recv(again)
	if r.ErrorCode != 0 || r.MemberEpoch == e0 {
		t.Fatalf("heartbeat sent again: error %d, epoch %d (sent %d)", r.ErrorCode, r.MemberEpoch, e0)
	}
	n := 0
	if r.Assignment != nil {
		for _, tp := range r.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
	}
	if r.Assignment == nil || n != 2 {
		t.Fatalf("heartbeat sent again: epoch %d -> %d with assignment %+v, want both partitions", e0, r.MemberEpoch, r.Assignment)
	}
}

// waitSecondInitializer waits (10 s at most) until a second heartbeat of
// group waits for the first one's initialization.
func waitSecondInitializer(t *testing.T, m *Manager, group string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.initLocks.mu.Lock()
		waiting := m.initLocks.locks[group] != nil && m.initLocks.locks[group].refs == 2
		m.initLocks.mu.Unlock()
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second heartbeat of %s does not wait for the first one's initialization", group)
		}
		time.Sleep(time.Millisecond)
	}
}
