package broker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With eligible.leader.replicas.version 1, a replica that leaves the
// in-sync set below min.insync.replicas is listed by DescribeTopicPartitions
// as an eligible leader replica, and the high watermark does not advance
// while the in-sync set is below min.insync.replicas (KIP-966): records
// written with acks=1 meanwhile, though on both remaining replicas, become
// visible only once the stopped replica is back in sync.
func TestClusterEligibleLeaderReplicas(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = 1
	fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "eligible.leader.replicas.version", 1, 1
	req.FeatureUpdates = append(req.FeatureUpdates, fu)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	uresp, err := req.RequestWith(ctx, cl)
	if err != nil || uresp.ErrorCode != 0 || (len(uresp.Results) == 1 && uresp.Results[0].ErrorCode != 0) {
		t.Fatalf("enable ELR: %v %+v", err, uresp)
	}
	if res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "elr"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	md := waitCluster(t, adm, "the topic's leader", func(md kadm.Metadata) bool {
		return len(md.Topics["elr"].Partitions) == 1 && md.Topics["elr"].Partitions[0].Leader > 0
	})
	leader := md.Topics["elr"].Partitions[0].Leader
	stopped := int32(1)
	if leader == 1 {
		stopped = 2
	}
	tc.nodes[stopped-1].stop() // a controlled shutdown: fenced at once
	// Its clean shutdown recorded its broker epoch, which it registers with
	// when it returns (an unclean one would cost it its eligibility).
	marker, err := os.ReadFile(filepath.Join(tc.nodes[stopped-1].opts.DataDir, ".kafka_cleanshutdown"))
	var m struct{ BrokerEpoch int64 }
	if err != nil || json.Unmarshal(marker, &m) != nil || m.BrokerEpoch <= 0 {
		t.Fatalf("clean-shutdown marker %q (%v): want the broker epoch", marker, err)
	}
	addr := tc.nodes[leader-1].addr
	describe := func() kmsg.DescribeTopicPartitionsResponseTopicPartition {
		dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		dt.Topic = "elr"
		dreq.Topics = append(dreq.Topics, dt)
		dreq.ResponsePartitionLimit = 10
		dresp := kmsg.NewPtrDescribeTopicPartitionsResponse()
		rawRequest(t, addr, dreq, dresp)
		if len(dresp.Topics) != 1 || len(dresp.Topics[0].Partitions) != 1 {
			t.Fatalf("describe: %+v", dresp)
		}
		return dresp.Topics[0].Partitions[0]
	}
	var last kmsg.DescribeTopicPartitionsResponseTopicPartition
	deadline := time.Now().Add(60 * time.Second)
	for {
		last = describe()
		if slices.Equal(last.EligibleLeaderReplicas, []int32{stopped}) && !slices.Contains(last.ISR, stopped) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fenced replica never became eligible: %+v", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last.LastKnownELR == nil || len(last.LastKnownELR) != 0 {
		t.Fatalf("last known ELR %v, want []", last.LastKnownELR)
	}

	// Two records with acks=1. Once the other follower holds the second,
	// it has fetched at offset 1 (reporting the first) and, without the
	// rule, the high watermark of the two in-sync replicas would be 1.
	var live []string
	other := int32(0)
	for i, n := range tc.nodes {
		if int32(i+1) != stopped {
			live = append(live, n.addr)
			if int32(i+1) != leader {
				other = int32(i + 1)
			}
		}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(live...), kgo.DefaultProduceTopic("elr"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	otherLog := func() int64 {
		if l := tc.nodes[other-1].broker().Logs().Get("elr", 0); l != nil {
			return l.LogEndOffset()
		}
		return -1
	}
	for i := range 2 {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatalf("acks=1 produce %d: %v", i, err)
		}
		pollUntilFor(t, 60*time.Second, "the other follower holds the record", func() bool { return otherLog() >= int64(i+1) })
	}
	hw := func() int64 {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		defer lcancel()
		ends, err := kadm.NewClient(pcl).ListEndOffsets(lctx, "elr")
		if err != nil {
			return -1
		}
		o, ok := ends.Lookup("elr", 0)
		if !ok || o.Err != nil {
			return -1
		}
		return o.Offset
	}
	var h int64 = -1
	pollUntilFor(t, 60*time.Second, "the high watermark", func() bool { h = hw(); return h >= 0 })
	if h != 0 {
		t.Fatalf("high watermark %d with two of min.insync.replicas=3 in sync, want it held at 0", h)
	}
	// The stopped replica returns and catches up: the high watermark moves.
	tc.nodes[stopped-1].start()
	pollUntilFor(t, 60*time.Second, "the high watermark after the replica's return", func() bool { h = hw(); return h == 2 })
	for i, n := range tc.nodes {
		if strings.Contains(n.logs.text(), "after an unclean shutdown") {
			t.Fatalf("node %d's controller took the clean restart for an unclean shutdown", i+1)
		}
	}
}

// pollUntilFor retries cond every 20 ms until it holds or d has passed.
func pollUntilFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
