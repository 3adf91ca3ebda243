package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// registered starts the environment's active controller with brokers
// 1..n registered and unfenced; it returns the controller and the epochs.
func registered(t *testing.T, e *env, n int32) (*member, map[int32]int64) {
	t.Helper()
	ctx := context.Background()
	_, l := e.active()
	epochs := map[int32]int64{}
	for b := int32(1); b <= n; b++ {
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i1"}})
		if err != nil {
			t.Fatalf("register %d: %v", b, err)
		}
		epochs[b] = r.Epoch
		if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil || hb.Fenced {
			t.Fatalf("heartbeat %d: %+v %v", b, hb, err)
		}
	}
	return l, epochs
}

func TestControllerReassignment(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l, epochs := registered(t, e, 4)
	l.ctrl.cfg.MaxReplicationFactor = 4
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "t", Assignments: [][]int32{{1, 2}, {1, 2}}}); err != nil {
		t.Fatal(err)
	}
	part := func(i int) metadata.Partition { return l.store.Image().Topics["t"].Partitions[i] }
	reassign := func(req ReassignRequest) ReassignResponse {
		t.Helper()
		r, err := l.ctrl.Reassign(ctx, req)
		if err != nil {
			t.Fatalf("reassign %+v: %v", req, err)
		}
		return r
	}

	// Refusals, as Kafka's.
	for _, tc := range []struct {
		req  ReassignRequest
		code int16
	}{
		{ReassignRequest{Topic: "t", Partition: 0, Cancel: true}, kerr.NoReassignmentInProgress.Code},
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{}}, kerr.InvalidReplicaAssignment.Code},
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{2, 2}}, kerr.InvalidReplicaAssignment.Code},
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{2, 9}}, kerr.InvalidReplicaAssignment.Code},
		{ReassignRequest{Topic: "t", Partition: 2, Replicas: []int32{2}}, kerr.UnknownTopicOrPartition.Code},
		{ReassignRequest{Topic: "nope", Partition: 0, Replicas: []int32{2}}, kerr.UnknownTopicOrPartition.Code},
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{1, 2}}, 0}, // the current assignment: nothing to do
	} {
		if r := reassign(tc.req); r.Code != tc.code || (tc.code == 0 && r.Offset != 0) {
			t.Errorf("%+v: %+v, want code %d", tc.req, r, tc.code)
		}
	}

	// {1,2} → {2,3}: replicas are the target then the removed replica,
	// the leader and in-sync set stay until broker 3 is in sync.
	before := part(0)
	reassign(ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{2, 3}})
	p := part(0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) ||
		!slices.Equal(p.RemovingReplicas, []int32{1}) || p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) ||
		p.LeaderEpoch != before.LeaderEpoch || p.PartitionEpoch != before.PartitionEpoch+1 {
		t.Fatalf("reassigning: %+v (before %+v)", p, before)
	}
	l.ctrl.step(ctx)
	if !part(0).Reassigning() {
		t.Fatal("completed before the new replica is in sync")
	}
	// The leader adds broker 3 to the in-sync set; the next step finishes:
	// replicas {2,3}, broker 1 out, leadership to broker 2.
	if _, err := l.ctrl.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, BrokerEpoch: epochs[1], Topic: "t",
		TopicID: l.store.Image().Topics["t"].ID, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		ISR: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	l.ctrl.step(ctx)
	p = part(0)
	if p.Reassigning() || !slices.Equal(p.Replicas, []int32{2, 3}) || !slices.Equal(p.ISR, []int32{2, 3}) ||
		p.Leader != 2 || p.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("after completion: %+v", p)
	}

	// {1,2} → {3,4}, then cancelled: back to {1,2}, led by 1.
	before = part(1)
	reassign(ReassignRequest{Topic: "t", Partition: 1, Replicas: []int32{3, 4}})
	if p := part(1); !slices.Equal(p.Replicas, []int32{3, 4, 1, 2}) || !slices.Equal(p.AddingReplicas, []int32{3, 4}) {
		t.Fatalf("reassigning: %+v", p)
	}
	// A new target while one is in progress starts from the original.
	reassign(ReassignRequest{Topic: "t", Partition: 1, Replicas: []int32{4, 1}})
	if p := part(1); !slices.Equal(p.Replicas, []int32{4, 1, 2}) || !slices.Equal(p.AddingReplicas, []int32{4}) ||
		!slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("changed reassignment: %+v", p)
	}
	reassign(ReassignRequest{Topic: "t", Partition: 1, Cancel: true})
	if p := part(1); p.Reassigning() || !slices.Equal(p.Replicas, []int32{1, 2}) || !slices.Equal(p.ISR, []int32{1, 2}) || p.Leader != 1 {
		t.Fatalf("cancelled: %+v (before %+v)", p, before)
	}

	// A target inside the in-sync set completes at once: {2,3} → {3}.
	reassign(ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{3}})
	if p := part(0); p.Reassigning() || !slices.Equal(p.Replicas, []int32{3}) || p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("shrunk: %+v", p)
	}
}
