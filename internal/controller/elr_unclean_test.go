package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// KIP-966: a broker that registers after an unclean shutdown (its previous
// broker epoch is not its registered one) leaves every ELR and is listed
// in the last known ELR; one that shut down cleanly stays eligible and is
// elected when it is back.
func TestControllerELRUncleanShutdown(t *testing.T) {
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
	alter(lead, x)
	alter(lead)
	fence(x, y) // lead fenced: x leads, lead eligible
	fence(y)    // x fenced too: leaderless, both eligible
	if p := part(); p.Leader != metadata.NoLeader || !slices.Equal(p.ELR, inOrder(reps, lead, x)) {
		t.Fatalf("before the restarts: %+v", p)
	}
	register := func(b int32, prev *int64) {
		t.Helper()
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "j"}, PreviousBrokerEpoch: prev})
		if err != nil {
			t.Fatal(err)
		}
		epochs[b] = r.Epoch
	}
	// x crashed (no clean-shutdown epoch): it leaves the ELR for the last
	// known ELR.
	crashed := int64(-1)
	register(x, &crashed)
	if p := part(); !slices.Equal(p.ELR, []int32{lead}) || !slices.Contains(p.LastKnownELR, x) || p.Leader != metadata.NoLeader {
		t.Fatalf("after x's unclean restart: leader %d elr %v last known %v, want elr [%d] and %d last known", p.Leader, p.ELR, p.LastKnownELR, lead, x)
	}
	// lead shut down cleanly in its registered epoch: still eligible, and
	// elected once it is unfenced.
	prev := epochs[lead]
	register(lead, &prev)
	if p := part(); !slices.Equal(p.ELR, []int32{lead}) {
		t.Fatalf("after lead's clean restart: elr %v, want [%d]", p.ELR, lead)
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: lead, Epoch: epochs[lead], MetadataOffset: l.store.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	l.ctrl.step(ctx)
	if p := part(); p.Leader != lead || !slices.Equal(p.ISR, []int32{lead}) {
		t.Fatalf("the clean eligible replica is back: leader %d isr %v, want %d", p.Leader, p.ISR, lead)
	}
}

// A replication factor 1 partition whose broker crashed (fenced: its
// in-sync set empties into the ELR; back after an unclean shutdown: the
// ELR empties into the last known ELR) is led by that broker again once it
// is unfenced, as Kafka 4.x elects the last known leader.
func TestControllerELRLastKnownLeader(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l, epochs := registered(t, e, 3)
	tr, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "one", Assignments: [][]int32{{3}}})
	if err != nil || tr.Partitions[0].Leader != 3 {
		t.Fatalf("create: %+v %v", tr, err)
	}
	part := func() metadata.Partition { return l.store.Image().Topics["one"].Partitions[0] }
	e.clock.advance(session + time.Second)
	for _, b := range []int32{1, 2} {
		if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: epochs[b], MetadataOffset: l.store.Image().Offset}); err != nil {
			t.Fatal(err)
		}
	}
	l.ctrl.step(ctx)
	if p := part(); p.Leader != metadata.NoLeader || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{3}) {
		t.Fatalf("broker 3 fenced: %+v", p)
	}
	crashed := int64(-1)
	r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 3, Incarnation: "j"}, PreviousBrokerEpoch: &crashed})
	if err != nil {
		t.Fatal(err)
	}
	if p := part(); p.Leader != metadata.NoLeader || len(p.ELR) != 0 || !slices.Equal(p.LastKnownELR, []int32{3}) {
		t.Fatalf("broker 3 back after an unclean shutdown: %+v", p)
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 3, Epoch: r.Epoch, MetadataOffset: l.store.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	if p := part(); p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) || len(p.LastKnownELR) != 0 || p.LeaderEpoch <= tr.Partitions[0].LeaderEpoch {
		t.Fatalf("broker 3 unfenced: %+v", p)
	}
}

// The same when the broker registers again after its crash before its
// session ran out (it was never fenced): the registration takes it out of
// the in-sync set, it is remembered as the last known leader, and it leads
// again once unfenced.
func TestControllerELRLastKnownLeaderBeforeFencing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l, _ := registered(t, e, 3)
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "one", Assignments: [][]int32{{3}}}); err != nil {
		t.Fatal(err)
	}
	part := func() metadata.Partition { return l.store.Image().Topics["one"].Partitions[0] }
	// Its session ran out, but no controller step fenced it yet.
	e.clock.advance(session + time.Second)
	if !l.store.Image().IsLive(3) {
		t.Fatal("broker 3 fenced before it registers again")
	}
	crashed := int64(-1)
	r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: 3, Incarnation: "j"}, PreviousBrokerEpoch: &crashed})
	if err != nil {
		t.Fatal(err)
	}
	if p := part(); p.Leader != metadata.NoLeader || !slices.Equal(p.LastKnownELR, []int32{3}) {
		t.Fatalf("broker 3 registered again after a crash: %+v", p)
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 3, Epoch: r.Epoch, MetadataOffset: l.store.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	if p := part(); p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("broker 3 unfenced: %+v", p)
	}
}
