package controller

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// A new cluster records its default feature levels with its cluster id, so
// eligible leader replicas are on; a cluster formatted by an older Sluice
// (a cluster id and no features record) keeps them off, also across an
// UpdateFeatures of another feature, until an upgrade turns them on.
func TestControllerELRDefault(t *testing.T) {
	ctx := context.Background()
	elr := func(m *member) int16 {
		im := m.store.Image()
		return features.Finalized(im.Features, im.ClusterID != "").Level(features.EligibleLeaderReplicasVersion)
	}

	e := newEnv(t)
	_, l := e.active()
	if im := l.store.Image(); im.ClusterID == "" || im.Features == nil || !elrEnabled(im) || elr(l) != 1 {
		t.Fatalf("new cluster: id %q features %v", im.ClusterID, im.Features)
	}

	// An existing cluster: its id was committed before this Sluice's
	// controller first became active.
	old := newEnv(t)
	deadline := time.Now().Add(30 * time.Second)
	var leader *member
	for leader == nil {
		if time.Now().After(deadline) {
			t.Fatal("no raft leader")
		}
		for _, m := range old.m {
			m.node.Tick()
		}
		time.Sleep(2 * time.Millisecond)
		for id, m := range old.m {
			if m.node.Leader() == id {
				leader = m
			}
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := leader.node.Propose(pctx, metadata.Batch{Records: []metadata.Record{
		{Type: metadata.SetClusterID, ClusterID: "formatted-earlier"}}}.Encode()); err != nil {
		t.Fatal(err)
	}
	_, l = old.active()
	if im := l.store.Image(); im.ClusterID != "formatted-earlier" || im.Features != nil || elrEnabled(im) {
		t.Fatalf("existing cluster: id %q features %v", im.ClusterID, im.Features)
	}
	if r, err := l.ctrl.UpdateFeatures(ctx, UpdateFeaturesRequest{Updates: []features.Update{
		{Name: features.GroupVersion, Level: 1, Type: features.Upgrade}}}); err != nil || r.Code != 0 {
		t.Fatalf("update group.version: %+v %v", r, err)
	}
	if im := l.store.Image(); im.Features == nil || elrEnabled(im) || elr(l) != 0 {
		t.Fatalf("another feature's update turned ELR on: %v", im.Features)
	}
	if r, err := l.ctrl.UpdateFeatures(ctx, UpdateFeaturesRequest{Updates: []features.Update{
		{Name: features.EligibleLeaderReplicasVersion, Level: 1, Type: features.Upgrade}}}); err != nil || r.Code != 0 {
		t.Fatalf("upgrade: %+v %v", r, err)
	}
	if im := l.store.Image(); !elrEnabled(im) {
		t.Fatalf("after the upgrade: %v", im.Features)
	}
}

// A downgrade of eligible.leader.replicas.version to 0 clears every ELR; a
// partition left without in-sync replicas gets its eligible ones back as
// its in-sync set, so that the first to return leads, as without the
// feature.
func TestControllerELRDowngrade(t *testing.T) {
	e := newEnv(t)
	for _, m := range e.m {
		m.ctrl.cfg.MaxReplicationFactor = 16
	}
	ctx := context.Background()
	l, epochs := registered(t, e, 3)
	tr, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "d", Partitions: 1, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	reps := tr.Partitions[0].Replicas
	lead, x, y := reps[0], reps[1], reps[2]
	part := func() metadata.Partition { return l.store.Image().Topics["d"].Partitions[0] }
	alter := func(isr ...int32) {
		t.Helper()
		p := part()
		if _, err := l.ctrl.AlterPartition(ctx, AlterPartitionRequest{BrokerID: p.Leader, BrokerEpoch: epochs[p.Leader], Topic: "d",
			TopicID: tr.TopicID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: isr}); err != nil {
			t.Fatalf("alter partition to %v: %v", isr, err)
		}
	}
	alter(lead, x)
	alter(lead)
	e.clock.advance(session + time.Second)
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: y, Epoch: epochs[y], MetadataOffset: l.store.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	l.ctrl.step(ctx)
	if p := part(); p.Leader != metadata.NoLeader || len(p.ISR) != 0 || fmtIDs(p.ELR) != fmtIDs(inOrder(reps, lead, x)) {
		t.Fatalf("before the downgrade: %+v", p)
	}
	if r, err := l.ctrl.UpdateFeatures(ctx, UpdateFeaturesRequest{Updates: []features.Update{
		{Name: features.EligibleLeaderReplicasVersion, Level: 0, Type: features.SafeDowngrade}}}); err != nil || r.Code != 0 {
		t.Fatalf("downgrade: %+v %v", r, err)
	}
	if p := part(); p.Leader != metadata.NoLeader || fmtIDs(p.ISR) != fmtIDs(inOrder(reps, lead, x)) || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("after the downgrade: %+v", p)
	}
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: x, Epoch: epochs[x], MetadataOffset: l.store.Image().Offset}); err != nil {
		t.Fatal(err)
	}
	if p := part(); p.Leader != x {
		t.Fatalf("an in-sync replica returned: %+v", p)
	}
}
