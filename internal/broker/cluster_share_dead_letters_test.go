package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/share"
)

// On a cluster, a share partition's leader sends a dead letter whose partition another
// broker leads to that broker, which appends it.
func TestClusterShareDeadLetterOnAnotherBroker(t *testing.T) {
	tc := startTestCluster(t, 2, map[string]string{"share.coordinator.state.topic.num.partitions": "1", "share.auto.offset.reset": "earliest"})
	ctx := dpCtx(t, 120*time.Second)
	adm := tc.admin()
	pollUntil(t, "two live brokers", func() bool {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(c)
		return err == nil && len(md.Brokers) == 2
	})
	createAssigned(t, ctx, tc, "q", [][]int32{{1}}, nil)
	createAssigned(t, ctx, tc, "dlq.q", [][]int32{{2}}, map[string]string{"errors.deadletterqueue.group.enable": "true"})
	waitImages(t, tc, "both topics led by their replicas", func(im *metadata.Image) bool {
		q, ok1 := im.Partition("q", 0)
		d, ok2 := im.Partition("dlq.q", 0)
		return ok1 && ok2 && q.Leader == 1 && d.Leader == 2
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("poison")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	n1, b1 := tc.nodes[0].addr, tc.nodes[0].broker()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	for k, v := range map[string]string{"errors.deadletterqueue.topic.name": "dlq.q", "errors.deadletterqueue.copy.record.enable": "true"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		ar.Configs = append(ar.Configs, c)
	}
	alter.Resources = append(alter.Resources, ar)
	alter.Version = 1
	aresp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	aresp.Version = alter.Version
	rawRequest(t, n1, alter, aresp)
	if aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group configs: %v", kerr.ErrorForCode(aresp.Resources[0].ErrorCode))
	}
	pollUntil(t, "node 1 to apply the group configs", func() bool {
		return b1.shares.GroupConfig("sg").DeadLetterTopic == "dlq.q"
	})
	top, ok := b1.topics.Get("q")
	if !ok {
		t.Fatal("node 1 has no topic q")
	}
	g, m := "sg", "A"
	epoch := int32(0)
	fetch := func() *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 1
		req.GroupID, req.MemberID = &g, &m
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxRecords, req.MaxBytes = epoch, 500, 10, 1<<20
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = top.ID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrShareFetchResponse()
		resp.Version = req.Version
		rawRequest(t, n1, req, resp)
		epoch++
		return resp
	}
	pollUntil(t, "node 1 to acquire the record", func() bool {
		r := fetch()
		return r.ErrorCode == 0 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 &&
			len(r.Topics[0].Partitions[0].AcquiredRecords) == 1
	})
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 1
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &g, &m, epoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = top.ID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 0, []int8{share.AckReject}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	akresp := kmsg.NewPtrShareAcknowledgeResponse()
	akresp.Version = ack.Version
	rawRequest(t, n1, ack, akresp)
	if akresp.ErrorCode != 0 || akresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %+v", akresp)
	}
	b2 := tc.nodes[1].broker()
	pollUntil(t, "the dead letter on node 2", func() bool {
		p := b2.replicas.Get("dlq.q", 0)
		return p != nil && p.HighWatermark() == 1
	})
	if key, value := b2.recordAt("dlq.q", 0, 0); key != nil || string(value) != "poison" {
		t.Fatalf("dead letter: key %q value %q, want the rejected record's", key, value)
	}
}
