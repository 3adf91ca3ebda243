package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 consumer group survives a broker restart: its member keeps its id, epoch
// and partitions, and may commit and heartbeat at its epoch right after the restart
// (issue: KIP-848 consumer groups forgotten on restart).
func TestConsumerGroupSurvivesBrokerRestart(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tb.admin().CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	heartbeat := func(epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "g", "member-1", epoch
		req.RebalanceTimeoutMillis = -1
		req.Topics = owned
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{"t"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		return tb.request(req).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	commit := func(epoch int32, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = "g", "member-1", epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "t", topicID(t, tb, "t") // by name below v10, by id from v10
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return tb.request(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"g"}
		return tb.request(req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	}

	r := heartbeat(0, nil)
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join: %+v", r)
	}
	epoch := r.MemberEpoch
	owned := []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: r.Assignment.Topics[0].TopicID, Partitions: r.Assignment.Topics[0].Partitions}}
	if r := heartbeat(epoch, owned); r.ErrorCode != 0 || r.MemberEpoch != epoch {
		t.Fatalf("heartbeat: %+v", r)
	}
	if code := commit(epoch, 3); code != 0 {
		t.Fatalf("commit before restart: error %d", code)
	}
	before := describe()

	tb.restart()

	if code := commit(epoch, 4); code != 0 {
		t.Fatalf("commit after restart: error %d, want 0 (the member must still be known)", code)
	}
	if r := heartbeat(epoch, owned); r.ErrorCode != 0 || r.MemberEpoch != epoch {
		t.Fatalf("heartbeat after restart: error %d epoch %d, want 0 and %d", r.ErrorCode, r.MemberEpoch, epoch)
	}
	after := describe()
	if after.ErrorCode != 0 || after.State != "Stable" || after.Epoch != before.Epoch || len(after.Members) != 1 {
		t.Fatalf("group after restart: %+v\nbefore: %+v", after, before)
	}
	m := after.Members[0]
	if m.MemberID != "member-1" || m.MemberEpoch != epoch || len(m.Assignment.TopicPartitions) != 1 ||
		len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("member after restart: %+v", m)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = "g"
	fg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", TopicID: topicID(t, tb, "t"), Partitions: []int32{0}}}
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{fg}
	fetch.Group = "g"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	fr := tb.request(fetch).(*kmsg.OffsetFetchResponse)
	var got int64 = -2
	if len(fr.Groups) > 0 {
		got = fr.Groups[0].Topics[0].Partitions[0].Offset
	} else if len(fr.Topics) > 0 {
		got = fr.Topics[0].Partitions[0].Offset
	}
	if got != 4 {
		t.Fatalf("committed offset after restart %d, want 4", got)
	}
}
