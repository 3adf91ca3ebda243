package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/quorum"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// fakeClock is the controllers' clock: tests move it to expire sessions.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type member struct {
	node  *quorum.Node
	store *metadata.Store
	ctrl  *Controller
}

// env is three quorum voters on an in-memory network and MemFS, each with a
// controller; raft's clock is driven by tick, the controllers' by clock.
type env struct {
	t     *testing.T
	nw    *quorum.MemNetwork
	clock *fakeClock
	m     map[uint64]*member
}

const session = 3 * time.Second

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, nw: quorum.NewMemNetwork(), clock: &fakeClock{now: time.Unix(1_800_000_000, 0)}, m: map[uint64]*member{}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for id := uint64(1); id <= 3; id++ {
		store := metadata.NewStore()
		node, err := quorum.Start(quorum.Config{ID: id, ClusterID: 7, Peers: []uint64{1, 2, 3}, FS: vfs.NewMemFS(), Dir: "/q",
			Transport: e.nw.Transport(id), StateMachine: store})
		if err != nil {
			t.Fatal(err)
		}
		e.nw.Attach(node)
		e.m[id] = &member{node: node, store: store, ctrl: New(Config{Quorum: node, Store: store, Logger: logger,
			SessionTimeout: session, Now: e.clock.Now})}
	}
	t.Cleanup(func() {
		for _, m := range e.m {
			m.node.Stop()
		}
	})
	return e
}

// until ticks every running voter (ticks drive raft's timeouts only) and
// steps every controller until cond holds.
func (e *env) until(what string, cond func() bool, skip ...uint64) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		for id, m := range e.m {
			if !contains(skip, id) {
				m.node.Tick()
			}
		}
		time.Sleep(2 * time.Millisecond) // let the voters' loops run
		for id, m := range e.m {
			if !contains(skip, id) {
				m.ctrl.step(context.Background())
			}
		}
	}
}

func contains(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// active waits for an active controller other than the skipped ones.
func (e *env) active(skip ...uint64) (uint64, *member) {
	e.t.Helper()
	var id uint64
	e.until("an active controller", func() bool {
		for i, m := range e.m {
			if !contains(skip, i) && m.ctrl.Active() {
				id = i
				return true
			}
		}
		return false
	}, skip...)
	return id, e.m[id]
}

func code(err error) int16 {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	if err != nil {
		return -100
	}
	return 0
}

func TestControllerLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lid, l := e.active()
	if l.store.Image().ClusterID == "" {
		t.Fatal("the first active controller records no cluster id")
	}
	for id, m := range e.m {
		if id == lid {
			continue
		}
		// A follower always answers NOT_CONTROLLER; under load it may not
		// have heard from the new leader yet, so it names the leader once
		// it has (ticks go on meanwhile).
		e.until("a follower's NOT_CONTROLLER naming the leader", func() bool {
			_, err := m.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 9}})
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != kerr.NotController.Code {
				t.Fatalf("a follower's controller answered %v, want NOT_CONTROLLER", err)
			}
			return ce.Leader == lid
		})
	}

	// Three brokers register (fenced) and are unfenced by heartbeats once
	// caught up to their registration.
	epochs := map[int32]int64{}
	for b := int32(1); b <= 3; b++ {
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i1"}})
		if err != nil {
			t.Fatalf("register %d: %v", b, err)
		}
		epochs[b] = r.Epoch
		if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset - 1}); err != nil || !hb.Fenced {
			t.Fatalf("a broker behind its registration is unfenced: %+v %v", hb, err)
		}
		if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil || hb.Fenced {
			t.Fatalf("heartbeat %d: %+v %v", b, hb, err)
		}
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: epochs[1] - 1}); code(err) != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("old epoch: %v", err)
	}
	if _, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 2, Incarnation: "other"}}); code(err) != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("second process as a live broker: %v", err)
	}

	// Placement spreads leaders; replication factor above 1 is refused.
	tr, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "t", Partitions: 6, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	per := map[int32]int{}
	for _, p := range tr.Partitions {
		per[p.Leader]++
	}
	if per[1] != 2 || per[2] != 2 || per[3] != 2 {
		t.Fatalf("leaders %v", per)
	}
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: 1}); code(err) != kerr.TopicAlreadyExists.Code {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "r", Partitions: 1, ReplicationFactor: 2}); code(err) != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("rf 2: %v", err)
	}
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "x", Assignments: [][]int32{{3}, {4}}}); code(err) != kerr.BrokerNotAvailable.Code {
		t.Fatalf("assignment to an unknown broker: %v", err)
	}
	if r, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "a", Assignments: [][]int32{{3}, {3}}}); err != nil || r.Partitions[1].Leader != 3 {
		t.Fatalf("explicit assignment: %+v %v", r, err)
	}
	b1, err := l.ctrl.AllocateProducerIDs(ctx, ProducerIDsRequest{BrokerID: 1, Epoch: epochs[1]})
	b2, err2 := l.ctrl.AllocateProducerIDs(ctx, ProducerIDsRequest{BrokerID: 2, Epoch: epochs[2]})
	if err != nil || err2 != nil || b2.First != b1.First+b1.Count {
		t.Fatalf("producer id blocks %+v %+v (%v %v)", b1, b2, err, err2)
	}

	// Broker 3 falls silent: after the session it is fenced and its
	// partitions have no leader (replication factor 1), under new epochs.
	e.clock.advance(session + time.Second)
	for _, b := range []int32{1, 2} {
		if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: epochs[b], MetadataOffset: l.store.Image().Offset}); err != nil {
			t.Fatal(err)
		}
	}
	l.ctrl.step(ctx)
	im := l.store.Image()
	if im.IsLive(3) || !im.IsLive(1) || !im.IsLive(2) {
		t.Fatalf("liveness after the session: %+v", im.LiveBrokers())
	}
	for i, p := range im.Topics["t"].Partitions {
		if p.Replicas[0] == 3 && (p.Leader != metadata.NoLeader || p.LeaderEpoch != 1 || p.PartitionEpoch != 1) {
			t.Fatalf("partition %d of the fenced broker: %+v", i, p)
		}
		if p.Replicas[0] != 3 && p.Leader != p.Replicas[0] {
			t.Fatalf("partition %d moved: %+v", i, p)
		}
	}
	// It comes back: unfenced, leads again under a new epoch.
	if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 3, Epoch: epochs[3], MetadataOffset: im.Offset}); err != nil || hb.Fenced {
		t.Fatalf("return: %+v %v", hb, err)
	}
	for i, p := range l.store.Image().Topics["t"].Partitions {
		if p.Leader != p.Replicas[0] || (p.Replicas[0] == 3 && p.LeaderEpoch != 2) {
			t.Fatalf("partition %d after the return: %+v", i, p)
		}
	}

	// The controller's node is cut off: another becomes the active
	// controller, with every decision of the old one, and decides on; the
	// old one steps down and answers NOT_CONTROLLER.
	e.nw.Isolate(lid)
	nid, n := e.active(lid)
	if _, ok := n.store.Image().Topics["a"]; !ok {
		t.Fatal("the new controller's image lacks a committed topic")
	}
	if _, err := n.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "after", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create on the new controller %d: %v", nid, err)
	}
	e.until("the isolated controller to step down", func() bool { return !l.ctrl.Active() })
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "lost", Partitions: 1, ReplicationFactor: 1}); code(err) != kerr.NotController.Code {
		t.Fatalf("isolated controller: %v", err)
	}
	e.nw.Heal()
	e.until("the old node to learn the new topic", func() bool {
		_, ok := l.store.Image().Topics["after"]
		return ok
	})
	if _, ok := l.store.Image().Topics["lost"]; ok {
		t.Fatal("a topic refused by a deposed controller exists")
	}
}
