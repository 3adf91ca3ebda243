package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetForLeaderEpoch(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "ep", 1, nil)
	ask := func(topic string, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = current, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return dpRaw(t, tb, req, 4).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}
	if r := ask("ep", -1, 0); r.ErrorCode != 0 || r.LeaderEpoch != 0 || r.EndOffset != 0 {
		t.Fatalf("empty log, epoch 0: %+v", r)
	}
	dpProduce(t, tb, dpProduceReq("ep", 0, dpBatch(t, -1, -1, -1, 7)))
	if r := ask("ep", 0, 0); r.ErrorCode != 0 || r.LeaderEpoch != 0 || r.EndOffset != 7 {
		t.Fatalf("epoch 0: %+v", r)
	}
	if r := ask("ep", -1, 3); r.ErrorCode != 0 || r.LeaderEpoch != -1 || r.EndOffset != -1 {
		t.Fatalf("future epoch: %+v", r)
	}
	if r := ask("ep", 2, 0); r.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("current leader epoch 2: %+v", r)
	}
	if r := ask("nope", -1, 0); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
}
