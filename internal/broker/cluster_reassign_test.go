package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// createAssigned creates topic with explicit replica lists, one per
// partition, through CreateTopics.
func createAssigned(t *testing.T, ctx context.Context, tc *testCluster, topic string, assign [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, reps := range assign {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), reps
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
}

// waitImages polls until cond holds for the metadata image of every
// running node (kgo answers metadata requests from its cache for up to
// 5 s, so tests of metadata changes read the nodes' images).
func waitImages(t *testing.T, tc *testCluster, what string, cond func(*metadata.Image) bool) {
	t.Helper()
	waitFor(t, what, func() bool {
		for _, n := range tc.nodes {
			if n.srv == nil {
				continue
			}
			if im := n.broker().image(); im == nil || !cond(im) {
				return false
			}
		}
		return true
	})
}

// TestClusterReassignment moves a partition with data from brokers {1,2}
// to {2,3}: broker 3 gets the data, broker 1 deletes its copy, and a
// consumer reads every record.
func TestClusterReassignment(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "3000"})
	adm := tc.admin()
	waitImages(t, tc, "three live brokers", func(im *metadata.Image) bool { return len(im.LiveBrokers()) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createAssigned(t, ctx, tc, "mv", [][]int32{{1, 2}}, nil)
	waitImages(t, tc, "mv led by 1 with {1,2} in sync", func(im *metadata.Image) bool {
		p, ok := im.Partition("mv", 0)
		return ok && p.Leader == 1 && len(p.ISR) == 2
	})
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("mv"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	const total = 200
	var recs []*kgo.Record
	for i := range total {
		recs = append(recs, kgo.StringRecord(fmt.Sprintf("r-%03d", i)))
	}
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	dir1 := filepath.Join(tc.nodes[0].opts.DataDir, "mv-0")
	if _, err := os.Stat(dir1); err != nil {
		t.Fatalf("broker 1 has no mv-0 directory before the move: %v", err)
	}

	// v1 with allow_replication_factor_change false (KIP-860): a target of
	// three replicas for a partition of two is refused, nothing starts.
	v1 := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	v1.Version, v1.TimeoutMillis, v1.AllowReplicationFactorChange = 1, 30000, false
	v1t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	v1t.Topic = "mv"
	v1p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	v1p.Partition, v1p.Replicas = 0, []int32{1, 2, 3}
	v1t.Partitions = append(v1t.Partitions, v1p)
	v1.Topics = append(v1.Topics, v1t)
	v1resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	v1resp.Version = 1
	rawRequest(t, tc.nodes[0].addr, v1, v1resp)
	if v1resp.ErrorCode != 0 || v1resp.AllowReplicationFactorChange || len(v1resp.Topics) != 1 ||
		len(v1resp.Topics[0].Partitions) != 1 || v1resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("v1 replication factor change not allowed: %+v", v1resp)
	}
	if p, ok := tc.nodes[0].broker().image().Partition("mv", 0); !ok || p.Reassigning() || len(p.Replicas) != 2 {
		t.Fatalf("refused reassignment changed the partition: %+v", p)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("mv", 0, []int32{2, 3})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || res["mv"][0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	waitImages(t, tc, "mv on {2,3}, led by 2", func(im *metadata.Image) bool {
		p, ok := im.Partition("mv", 0)
		return ok && slices.Equal(p.Replicas, []int32{2, 3}) && p.Leader == 2 && slices.Equal(p.ISR, []int32{2, 3})
	})
	if l, err := adm.ListPartitionReassignments(ctx, nil); err != nil || len(l) != 0 {
		t.Fatalf("reassignments listed after completion: %v %+v", err, l)
	}
	waitFor(t, "broker 3's copy to hold every record", func() bool {
		l := tc.nodes[2].broker().logs.Get("mv", 0)
		return l != nil && l.LogEndOffset() == total
	})
	waitFor(t, "broker 1's copy to be deleted", func() bool {
		_, err := os.Stat(dir1)
		return tc.nodes[0].broker().logs.Get("mv", 0) == nil && os.IsNotExist(err)
	})

	// Cancelling when nothing is in progress: NO_REASSIGNMENT_IN_PROGRESS.
	var cancelReq kadm.AlterPartitionAssignmentsReq
	cancelReq.CancelAssign("mv", 0)
	if res, err := adm.AlterPartitionAssignments(ctx, cancelReq); err != nil || res["mv"][0].Err == nil ||
		res["mv"][0].Err.Error() == "" {
		t.Fatalf("cancel with nothing in progress: %v %+v", err, res)
	}

	// Broker 1 leaves the cluster: what was on {1,2} is still all read
	// back from {2,3}.
	tc.nodes[0].stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("mv"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d", len(got), total)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("r-%03d", i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}

	// Decommissioning ends with UnregisterBroker: broker 1's registration
	// is removed; unknown ids get BROKER_ID_NOT_REGISTERED.
	unregister := func(id int32) *kmsg.UnregisterBrokerResponse {
		t.Helper()
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("UnregisterBroker %d: %v", id, err)
		}
		return resp
	}
	if r := unregister(1); r.ErrorCode != 0 {
		t.Fatalf("unregister 1: %+v", r)
	}
	waitImages(t, tc, "broker 1 unregistered", func(im *metadata.Image) bool { _, ok := im.Broker(1); return !ok })
	for _, id := range []int32{1, 9} {
		if r := unregister(id); r.ErrorCode != kerr.BrokerIDNotRegistered.Code || r.ErrorMessage == nil ||
			*r.ErrorMessage != fmt.Sprintf("Broker ID %d is not currently registered", id) {
			t.Fatalf("unregister %d again: %+v", id, r)
		}
	}
}

func TestUnregisterBrokerSingleNode(t *testing.T) {
	// The single-node path (a one-voter quorum unregisters its broker as
	// Kafka's controller does).
	tb := startTestBroker(t, testOptions{Props: map[string]string{oneVoterQuorumConfig: "false"}})
	self := tb.broker().NodeID()
	for _, tc := range []struct {
		id   int32
		code int16
	}{{self, kerr.InvalidRequest.Code}, {self + 1, kerr.BrokerIDNotRegistered.Code}} {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = tc.id
		resp := tb.request(req).(*kmsg.UnregisterBrokerResponse)
		if resp.ErrorCode != tc.code || resp.ErrorMessage == nil {
			t.Errorf("unregister %d: %+v, want code %d", tc.id, resp, tc.code)
		}
	}
}
