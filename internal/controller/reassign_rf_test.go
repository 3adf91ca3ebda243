package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AlterPartitionReassignments v1 with allow_replication_factor_change false
// (KeepReplicationFactor): a target of another size is refused with
// INVALID_REPLICATION_FACTOR and Kafka's message, after the assignment's
// own checks; the same size is accepted; during a reassignment the size
// compared is the target's in progress; without the flag the size may
// change, as before.
func TestControllerReassignKeepReplicationFactor(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l, _ := registered(t, e, 4)
	l.ctrl.cfg.MaxReplicationFactor = 4
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "t", Assignments: [][]int32{{1, 2}, {1, 2}}}); err != nil {
		t.Fatal(err)
	}
	reassign := func(req ReassignRequest) ReassignResponse {
		t.Helper()
		r, err := l.ctrl.Reassign(ctx, req)
		if err != nil {
			t.Fatalf("reassign %+v: %v", req, err)
		}
		return r
	}
	for _, tc := range []struct {
		req  ReassignRequest
		code int16
		msg  string
	}{
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, KeepReplicationFactor: true},
			kerr.InvalidReplicationFactor.Code, "The replication factor is changed from 2 to 3"},
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{3}, KeepReplicationFactor: true},
			kerr.InvalidReplicationFactor.Code, "The replication factor is changed from 2 to 1"},
		// The assignment's own checks come first.
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{3, 9, 4}, KeepReplicationFactor: true},
			kerr.InvalidReplicaAssignment.Code, ""},
		// Cancelling is not a target.
		{ReassignRequest{Topic: "t", Partition: 0, Cancel: true, KeepReplicationFactor: true},
			kerr.NoReassignmentInProgress.Code, ""},
		// Same size: accepted (a reassignment starts).
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{2, 3}, KeepReplicationFactor: true}, 0, ""},
		// In progress towards {2,3}: its size counts.
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{2, 3, 4}, KeepReplicationFactor: true},
			kerr.InvalidReplicationFactor.Code, "The replication factor is changed from 2 to 3"},
		{ReassignRequest{Topic: "t", Partition: 0, Replicas: []int32{3, 4}, KeepReplicationFactor: true}, 0, ""},
		// Allowed (v0, or v1 with the flag true): the size may change.
		{ReassignRequest{Topic: "t", Partition: 1, Replicas: []int32{1, 2, 3}}, 0, ""},
	} {
		r := reassign(tc.req)
		if r.Code != tc.code || (tc.msg != "" && r.Message != tc.msg) {
			t.Errorf("%+v: %+v, want code %d %q", tc.req, r, tc.code, tc.msg)
		}
	}
	if p := l.store.Image().Topics["t"].Partitions[0]; !p.Reassigning() || len(p.AddingReplicas) == 0 {
		t.Fatalf("partition 0 after the accepted targets: %+v", p)
	}
}
