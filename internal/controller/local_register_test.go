package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// TestLocalRegistrationReplacesPreviousIncarnation: the broker of the
// controller's own process (a node restarted after a crash) registers a new
// incarnation at once; another process with the same id is still refused
// until the session expires.
func TestLocalRegistrationReplacesPreviousIncarnation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, l := e.active()
	r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "before-the-crash"}})
	if err != nil {
		t.Fatal(err)
	}
	if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil || hb.Fenced {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	if _, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "other-process"}}); code(err) != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("another process's registration: %v", err)
	}
	r2, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "after-the-crash"}, Local: true})
	if err != nil {
		t.Fatalf("the local broker's new incarnation: %v", err)
	}
	if r2.Epoch <= r.Epoch {
		t.Fatalf("new broker epoch %d, want above %d", r2.Epoch, r.Epoch)
	}
}

// TestLocalRegistrationKeepsSoleLeaderships: the first registration of the
// broker of the controller's own process after a crash leaves the
// partitions it leads as their only in-sync replica to its unfencing,
// which renews each with a new leader epoch (one change instead of two); a
// partition with another live in-sync replica moves to it at the
// registration, as before; a registration from elsewhere takes every
// leadership away.
func TestLocalRegistrationKeepsSoleLeaderships(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, l := e.active()
	l.ctrl.cfg.MaxReplicationFactor = 3
	epochs := map[int32]int64{}
	for b := int32(1); b <= 2; b++ {
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i1"}})
		if err != nil {
			t.Fatal(err)
		}
		if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil || hb.Fenced {
			t.Fatalf("heartbeat %d: %+v %v", b, hb, err)
		}
		epochs[b] = r.Epoch
	}
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "solo", Assignments: [][]int32{{1}, {2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "shared", Assignments: [][]int32{{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	part := func(topic string, i int) metadata.Partition { return l.store.Image().Topics[topic].Partitions[i] }
	solo, shared := part("solo", 0), part("shared", 0)
	if solo.Leader != 1 || shared.Leader != 1 || len(shared.ISR) != 2 {
		t.Fatalf("placement: %+v %+v", solo, shared)
	}

	crashed := int64(-1)
	r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "after-the-crash"},
		PreviousBrokerEpoch: &crashed, Local: true, KeepLeaderships: true})
	if err != nil || !r.KeptLeaderships {
		t.Fatalf("local registration: %+v %v", r, err)
	}
	if b, _ := l.store.Image().Broker(1); !b.Fenced {
		t.Fatal("registered unfenced")
	}
	if p := part("solo", 0); p.Leader != 1 || p.LeaderEpoch != solo.LeaderEpoch || p.PartitionEpoch != solo.PartitionEpoch {
		t.Fatalf("the sole leadership changed at the registration: %+v, was %+v", p, solo)
	}
	if p := part("shared", 0); p.Leader != 2 || len(p.ISR) != 1 || p.ISR[0] != 2 || p.LeaderEpoch != shared.LeaderEpoch+1 {
		t.Fatalf("the shared partition did not move to the live in-sync replica: %+v", p)
	}
	hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: r.Epoch, MetadataOffset: r.Offset})
	if err != nil || hb.Fenced {
		t.Fatalf("unfencing: %+v %v", hb, err)
	}
	if im := l.store.Image(); hb.MetadataOffset != im.Offset || !im.IsLive(1) {
		t.Fatalf("unfencing answered offset %d, image at %d (broker 1 live: %v)", hb.MetadataOffset, im.Offset, im.IsLive(1))
	}
	renewed := part("solo", 0)
	if renewed.Leader != 1 || renewed.LeaderEpoch != solo.LeaderEpoch+1 || renewed.PartitionEpoch <= solo.PartitionEpoch {
		t.Fatalf("the kept leadership is not renewed under a new leader epoch: %+v, was %+v", renewed, solo)
	}
	if p := part("solo", 1); p.Leader != 2 || p.LeaderEpoch != 0 {
		t.Fatalf("broker 2's partition changed: %+v", p)
	}
	if p := part("shared", 0); p.Leader != 2 || p.LeaderEpoch != shared.LeaderEpoch+1 {
		t.Fatalf("the shared partition after the unfencing: %+v", p)
	}

	// Not from the controller's own process: KeepLeaderships is ignored
	// and the registration takes the leadership away.
	r, err = l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 1, Incarnation: "after-the-crash"},
		PreviousBrokerEpoch: &crashed, KeepLeaderships: true})
	if err != nil || r.KeptLeaderships {
		t.Fatalf("remote registration: %+v %v", r, err)
	}
	if p := part("solo", 0); p.Leader != metadata.NoLeader || p.LeaderEpoch != renewed.LeaderEpoch+1 {
		t.Fatalf("a remote registration kept the leadership: %+v", p)
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil {
		t.Fatal(err)
	}
	if p := part("solo", 0); p.Leader != 1 || p.LeaderEpoch != renewed.LeaderEpoch+2 {
		t.Fatalf("after the remote registration's unfencing: %+v", p)
	}
}
