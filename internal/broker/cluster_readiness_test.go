package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// TestFollowedOutOfSync: a partition this broker follows under a live
// leader without it in the in-sync set holds readiness back; one it leads,
// one without a live leader, one it is not a replica of, and one whose
// reassignment adds or removes it do not.
func TestFollowedOutOfSync(t *testing.T) {
	live := func(id int32) *metadata.BrokerRegistration { return &metadata.BrokerRegistration{ID: id} }
	im := &metadata.Image{
		Brokers: map[int32]*metadata.BrokerRegistration{1: live(1), 2: live(2), 3: live(3),
			4: {ID: 4, Fenced: true}},
		Topics: map[string]*metadata.Topic{
			"a": {Name: "a", Partitions: []metadata.Partition{
				{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1},          // followed, out of sync
				{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 2},       // followed, in sync
				{Replicas: []int32{3, 1}, ISR: []int32{1}, Leader: 3},                // led here
				{Replicas: []int32{4, 3}, ISR: []int32{4}, Leader: 4},                // leader fenced
				{Replicas: []int32{2, 3}, ISR: []int32{}, Leader: metadata.NoLeader}, // no leader
				{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},                // not a replica of broker 3; broker 2 out of sync
				{Replicas: []int32{1, 3}, ISR: []int32{1}, Leader: 1, AddingReplicas: []int32{3}},
				{Replicas: []int32{1, 3}, ISR: []int32{1}, Leader: 1, RemovingReplicas: []int32{3}},
			}},
			"b": {Name: "b", Partitions: []metadata.Partition{
				{Replicas: []int32{2, 3}, ISR: []int32{2}, Leader: 2}, // followed, out of sync
			}},
		},
	}
	if n, first := followedOutOfSync(im, 3); n != 2 || first != "a-0 (leader 1)" {
		t.Fatalf("broker 3: %d out of sync, first %q", n, first)
	}
	if n, first := followedOutOfSync(im, 2); n != 1 || first != "a-5 (leader 1)" {
		t.Fatalf("broker 2: %d out of sync, first %q", n, first)
	}
	if n, _ := followedOutOfSync(im, 1); n != 0 {
		t.Fatalf("broker 1: %d out of sync", n)
	}
	if n, _ := followedOutOfSync(nil, 3); n != 0 {
		t.Fatal("no image: out of sync")
	}
}

// TestClusterReadyWaitsForFollowedPartitions: a broker restarted while
// records were written to partitions it follows reports not ready (/readyz)
// until it is back in their in-sync sets, so that a rolling restart waiting
// for it does not stop the next broker too early (here its replication is
// throttled to hold it behind until the test lifts the throttle).
func TestClusterReadyWaitsForFollowedPartitions(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"auto.leader.rebalance.enable": "false"})
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Broker 3 follows both partitions and leads none.
	createAssigned(t, ctx, tc, "followed", [][]int32{{1, 2, 3}, {2, 1, 3}},
		map[string]string{"min.insync.replicas": "2", "follower.replication.throttled.replicas": "*"})
	waitCluster(t, adm, "three in-sync replicas", func(md kadm.Metadata) bool {
		ps := md.Topics["followed"].Partitions
		return len(ps) == 2 && len(ps[0].ISR) == 3 && len(ps[1].ISR) == 3
	})
	n3 := tc.nodes[2]
	waitFor(t, "node 3 ready", func() bool { return n3.broker().cluster.notReady() == "" })

	dir := n3.opts.DataDir
	n3.stop()
	waitCluster(t, adm, "node 3 out of the in-sync sets", func(md kadm.Metadata) bool {
		ps := md.Topics["followed"].Partitions
		return len(ps) == 2 && len(ps[0].ISR) == 2 && len(ps[1].ISR) == 2
	})
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.nodes[0].addr, tc.nodes[1].addr), kgo.DefaultProduceTopic("followed"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	value := strings.Repeat("x", 1000)
	for range 60 { // one batch each: the throttle lets a few through per second
		if err := pr.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Back with its replication throttled to 2 KB/s: registered, unfenced
	// and caught up with the metadata, but not in the in-sync sets.
	n3.opts.DataDir = dir
	n3.opts.Props["follower.replication.throttled.rate"] = "2000"
	n3.start()
	var reason string
	waitFor(t, "node 3 not ready for its followed partitions", func() bool {
		reason = n3.broker().cluster.notReady()
		return strings.Contains(reason, "followed here are not in their in-sync set")
	})
	t.Logf("node 3: not ready: %s", reason)

	// Lift the throttle: it catches up, joins both in-sync sets, is ready.
	del := "follower.replication.throttled.replicas"
	if res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: del}}, "followed"); err != nil || res[0].Err != nil {
		t.Fatalf("lift the throttle: %v %+v", err, res)
	}
	waitFor(t, "node 3 ready again", func() bool { return n3.broker().cluster.notReady() == "" })
	md := waitCluster(t, tc.admin(), "three in-sync replicas again", func(md kadm.Metadata) bool {
		ps := md.Topics["followed"].Partitions
		return len(ps) == 2 && len(ps[0].ISR) == 3 && len(ps[1].ISR) == 3
	})
	_ = md
}
