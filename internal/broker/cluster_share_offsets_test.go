package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The first share-group request of a cluster, an AlterShareGroupOffsets of an
// empty group (kafka-share-groups --reset-offsets, franz-go's
// TestShareGroupOffsetsAdmin), creates __share_group_state; it waits for the
// topic's leader, as Kafka's persister does, rather than failing with
// KAFKA_STORAGE_ERROR (at worst it answers the retriable
// COORDINATOR_NOT_AVAILABLE). Describe then sees the offset and Delete
// removes it.
func TestClusterShareOffsetsBeforeStateTopic(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	adm := tc.admin()
	poll := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	poll("three live brokers", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx)
		return err == nil && len(md.Brokers) == 3
	})
	const topic = "share-admin"
	poll("the topic to be created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := adm.CreateTopic(ctx, 1, 3, nil, topic)
		return err == nil && (r.Err == nil || r.Err == kerr.TopicAlreadyExists)
	})
	b1 := tc.nodes[0].broker()
	poll("node 1 to host the topic's replica", func() bool { return b1.replicas.Get(topic, 0) != nil })
	if im := b1.image(); im == nil {
		t.Fatal("node 1 has no metadata image")
	} else if _, ok := im.Topics[ShareStateTopic]; ok {
		t.Fatalf("%s exists before the first share-group request", ShareStateTopic)
	}
	n1 := tc.nodes[0].addr

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg-admin"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	ap.Partition, ap.StartOffset = 0, 8
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	// The broker waits up to 15 s for the coordinator; on a machine so loaded
	// that it takes longer, the answer is the retriable COORDINATOR_NOT_AVAILABLE,
	// and the request is sent again as a client would. Any other error fails.
	poll("AlterShareGroupOffsets to succeed", func() bool {
		aresp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
		rawRequest(t, n1, alter, aresp)
		if aresp.ErrorCode != 0 || len(aresp.Topics) != 1 || len(aresp.Topics[0].Partitions) != 1 {
			t.Fatalf("AlterShareGroupOffsets: error %d, topics %+v", aresp.ErrorCode, aresp.Topics)
		}
		switch code := aresp.Topics[0].Partitions[0].ErrorCode; code {
		case 0:
			return true
		case kerr.CoordinatorNotAvailable.Code:
			return false
		default:
			t.Fatalf("AlterShareGroupOffsets before %s existed: partition error %v", ShareStateTopic, kerr.ErrorForCode(code))
			return false
		}
	})

	describe := func() int64 {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = alter.GroupID
		gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
		rawRequest(t, n1, req, resp)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 ||
			len(resp.Groups[0].Topics[0].Partitions) != 1 || resp.Groups[0].Topics[0].Partitions[0].ErrorCode != 0 {
			return -100
		}
		return resp.Groups[0].Topics[0].Partitions[0].StartOffset
	}
	if got := describe(); got != 8 {
		t.Fatalf("DescribeShareGroupOffsets after the alter: start offset %d, want 8", got)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = alter.GroupID
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = topic
	del.Topics = append(del.Topics, dt)
	dresp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	rawRequest(t, n1, del, dresp)
	if dresp.ErrorCode != 0 || len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteShareGroupOffsets: error %d, topics %+v", dresp.ErrorCode, dresp.Topics)
	}
	if got := describe(); got != -1 {
		t.Fatalf("DescribeShareGroupOffsets after the deletion: start offset %d, want -1", got)
	}
}
