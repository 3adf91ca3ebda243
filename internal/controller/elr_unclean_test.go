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
