package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
)

func TestMaintainELR(t *testing.T) {
	live := func(ids ...int32) func(int32) bool {
		return func(r int32) bool {
			for _, id := range ids {
				if id == r {
					return true
				}
			}
			return false
		}
	}
	reps := []int32{1, 2, 3}
	for _, tt := range []struct {
		name  string
		p, np metadata.Partition
		live  func(int32) bool
		want  string
	}{
		{"shrink above min ISR: no ELR",
			metadata.Partition{Replicas: reps, ISR: []int32{1, 2, 3}, Leader: 1},
			metadata.Partition{Replicas: reps, ISR: []int32{1, 2}, Leader: 1}, live(1, 2, 3),
			"leader 1 isr [1 2] elr [] last []"},
		{"shrink below min ISR: the removed replica is eligible",
			metadata.Partition{Replicas: reps, ISR: []int32{1, 2}, Leader: 1},
			metadata.Partition{Replicas: reps, ISR: []int32{1}, Leader: 1}, live(1, 2, 3),
			"leader 1 isr [1] elr [2] last []"},
		{"the last in-sync replica fenced: a live ELR member leads",
			metadata.Partition{Replicas: reps, ISR: []int32{1}, ELR: []int32{2}, Leader: 1, LeaderEpoch: 4},
			metadata.Partition{Replicas: reps, ISR: []int32{1}, ELR: []int32{2}, Leader: metadata.NoLeader, LeaderEpoch: 5}, live(2, 3),
			"leader 2 isr [2] elr [1] last [] epoch 5"},
		{"no live eligible replica: leaderless, empty ISR",
			metadata.Partition{Replicas: reps, ISR: []int32{1}, ELR: []int32{2}, Leader: 1, LeaderEpoch: 4},
			metadata.Partition{Replicas: reps, ISR: []int32{1}, ELR: []int32{2}, Leader: metadata.NoLeader, LeaderEpoch: 5}, live(3),
			"leader -1 isr [] elr [1 2] last [] epoch 5"},
		{"an ELR member rejoins: ISR at min, ELR cleared",
			metadata.Partition{Replicas: reps, ISR: []int32{2}, ELR: []int32{1}, Leader: 2},
			metadata.Partition{Replicas: reps, ISR: []int32{2, 1}, ELR: []int32{1}, Leader: 2}, live(1, 2, 3),
			"leader 2 isr [2 1] elr [] last []"},
		{"only one last known ELR member left, live: it leads",
			metadata.Partition{Replicas: reps, LastKnownELR: []int32{2}, Leader: metadata.NoLeader, LeaderEpoch: 4},
			metadata.Partition{Replicas: reps, LastKnownELR: []int32{2}, Leader: metadata.NoLeader, LeaderEpoch: 4, PartitionEpoch: 1}, live(2, 3),
			"leader 2 isr [2] elr [] last [] epoch 5"},
		{"two last known ELR members: no election",
			metadata.Partition{Replicas: reps, LastKnownELR: []int32{1, 2}, Leader: metadata.NoLeader, LeaderEpoch: 4},
			metadata.Partition{Replicas: reps, LastKnownELR: []int32{1, 2}, Leader: metadata.NoLeader, LeaderEpoch: 4, PartitionEpoch: 1}, live(1, 2, 3),
			"leader -1 isr [] elr [] last [1 2] epoch 4"},
		{"unclean election: the old eligible replicas are last known",
			metadata.Partition{Replicas: reps, ELR: []int32{1, 2}, Leader: metadata.NoLeader},
			metadata.Partition{Replicas: reps, ISR: []int32{3}, ELR: []int32{1, 2}, Leader: 3, LeaderEpoch: 1}, live(3),
			"leader 3 isr [3] elr [] last [1 2] epoch 1"},
	} {
		got := maintainELR(tt.p, tt.np, 2, tt.live, func(int32) bool { return false })
		s := fmt.Sprintf("leader %d isr %v elr %v last %v", got.Leader, fmtIDs(got.ISR), fmtIDs(got.ELR), fmtIDs(got.LastKnownELR))
		if got.LeaderEpoch != 0 {
			s += fmt.Sprintf(" epoch %d", got.LeaderEpoch)
		}
		if s != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, s, tt.want)
		}
	}
}

func fmtIDs(ids []int32) string {
	if len(ids) == 0 {
		return "[]"
	}
	return fmt.Sprint(ids)
}

// Through the controller, with eligible.leader.replicas.version 1: the
// in-sync set shrinks below min.insync.replicas, its last member is fenced
// and an eligible replica leads; when every eligible replica is down the
// partition waits, and the first to return leads again.
func TestControllerELR(t *testing.T) {
	e := newEnv(t)
	for _, m := range e.m {
		m.ctrl.cfg.MaxReplicationFactor = 16
	}
	ctx := context.Background()
	_, l := e.active()
	epochs := map[int32]int64{}
	for b := int32(1); b <= 3; b++ {
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i"}})
		if err != nil {
			t.Fatal(err)
		}
		epochs[b] = r.Epoch
		if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := l.ctrl.UpdateFeatures(ctx, UpdateFeaturesRequest{Updates: []features.Update{
		{Name: features.EligibleLeaderReplicasVersion, Level: 1, Type: features.Upgrade}}}); err != nil || r.Code != 0 {
		t.Fatalf("enable ELR: %+v %v", r, err)
	}
	tr, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "e", Partitions: 1, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	reps := tr.Partitions[0].Replicas
	lead, x, y := reps[0], reps[1], reps[2]
	part := func() metadata.Partition { return l.store.Image().Topics["e"].Partitions[0] }
	alter := func(isr ...int32) {
		t.Helper()
		p := part()
		if _, err := l.ctrl.AlterPartition(ctx, AlterPartitionRequest{BrokerID: p.Leader, BrokerEpoch: epochs[p.Leader], Topic: "e",
			TopicID: tr.TopicID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: isr}); err != nil {
			t.Fatalf("alter partition to %v: %v", isr, err)
		}
	}
	expect := func(what string, leader int32, isr, elr []int32) {
		t.Helper()
		p := part()
		if p.Leader != leader || fmtIDs(p.ISR) != fmtIDs(isr) || fmtIDs(p.ELR) != fmtIDs(elr) {
			t.Fatalf("%s: leader %d isr %v elr %v, want %d %v %v", what, p.Leader, p.ISR, p.ELR, leader, isr, elr)
		}
	}
	alter(lead, x)
	expect("shrunk to min.insync.replicas", lead, []int32{lead, x}, nil)
	alter(lead)
	expect("shrunk below min.insync.replicas", lead, []int32{lead}, []int32{x})

	fence := func(alive ...int32) {
		t.Helper()
		e.clock.advance(session + time.Second)
		for _, b := range alive {
			if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: epochs[b], MetadataOffset: l.store.Image().Offset}); err != nil {
				t.Fatal(err)
			}
		}
		l.ctrl.step(ctx)
	}
	fence(x, y)
	expect("leader fenced: the eligible replica leads", x, []int32{x}, []int32{lead})
	fence(y)
	expect("every eligible replica fenced", metadata.NoLeader, nil, inOrder(reps, lead, x))
	// y is live but was never eligible: no election.
	l.ctrl.step(ctx)
	expect("still leaderless", metadata.NoLeader, nil, inOrder(reps, lead, x))
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: lead, Epoch: epochs[lead], MetadataOffset: l.store.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	l.ctrl.step(ctx)
	expect("an eligible replica returned", lead, []int32{lead}, []int32{x})
}

func inOrder(reps []int32, ids ...int32) []int32 {
	var out []int32
	for _, r := range reps {
		for _, id := range ids {
			if r == id {
				out = append(out, r)
			}
		}
	}
	return out
}

// A replication factor 1 partition whose broker registers again after a
// crash before it was fenced: the registration takes it out of the
// in-sync set without making it eligible, so it is remembered as the last
// known leader (elected again at its unfencing).
func TestMaintainELRLastKnownLeader(t *testing.T) {
	p := metadata.Partition{Replicas: []int32{3}, ISR: []int32{3}, Leader: 3, LeaderEpoch: 2}
	np := metadata.Partition{Replicas: []int32{3}, ISR: []int32{3}, Leader: metadata.NoLeader, LeaderEpoch: 3, PartitionEpoch: 1}
	none := func(int32) bool { return false }
	crashed := func(r int32) bool { return r == 3 }
	got := maintainELR(p, np, 1, none, crashed)
	if got.Leader != metadata.NoLeader || len(got.ISR) != 0 || len(got.ELR) != 0 || fmtIDs(got.LastKnownELR) != "[3]" {
		t.Fatalf("after the registration: %+v", got)
	}
	live := func(r int32) bool { return r == 3 }
	again := got
	again.PartitionEpoch++
	if back := maintainELR(got, again, 1, live, none); back.Leader != 3 || fmtIDs(back.ISR) != "[3]" || len(back.LastKnownELR) != 0 {
		t.Fatalf("at its unfencing: %+v", back)
	}
}
