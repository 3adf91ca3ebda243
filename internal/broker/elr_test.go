package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With eligible.leader.replicas.version 1, a replica that leaves the
// in-sync set below min.insync.replicas is listed by DescribeTopicPartitions
// as an eligible leader replica.
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
}
