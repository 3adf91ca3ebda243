package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// TestCrashRestartRenewsLeadershipsOnce: a one-voter node that crashed
// leads its partitions again after the restart under one new leader epoch
// each: its registration keeps the leaderships it held alone and its
// unfencing renews them (controller.RegisterRequest.KeepLeaderships), in
// one batch instead of a removal and a return. The old epoch is fenced and
// still ends where its records end (KIP-320's truncation detection), and
// nothing is served before the renewal.
func TestCrashRestartRenewsLeadershipsOnce(t *testing.T) {
	dir, fsys := t.TempDir(), vfs.NewMemFS()
	s := dpStartServer(t, dir, fsys)
	tb := s.tb(t)
	dpTopic(t, tb, "renew", 2, nil)
	if p := dpProduce(t, tb, dpProduceReq("renew", 0, dpBatch(t, -1, -1, -1, 3))); p.ErrorCode != 0 {
		t.Fatalf("produce: %+v", p)
	}
	epochs := func(tb *testBroker) map[int32]int32 {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("renew")
		req.Topics = append(req.Topics, rt)
		resp := tb.request(req).(*kmsg.MetadataResponse)
		out := map[int32]int32{}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader != 1 {
				t.Fatalf("partition %d: leader %d, error %d", p.Partition, p.Leader, p.ErrorCode)
			}
			out[p.Partition] = p.LeaderEpoch
		}
		return out
	}
	before := epochs(tb)

	dpCrash(s, fsys)

	s2 := dpStartServer(t, dir, fsys)
	defer s2.srv.Close()
	tb2 := s2.tb(t)
	after := epochs(tb2)
	for p, e := range before {
		if after[p] != e+1 {
			t.Errorf("partition %d: leader epoch %d before the crash, %d after (want one renewal: %d)", p, e, after[p], e+1)
		}
	}
	fetch := func(current int32) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "renew"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = current, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return dpRaw(t, tb2, req, 12).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	if r := fetch(before[0]); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch at the leader epoch before the crash: error %d, want FENCED_LEADER_EPOCH", r.ErrorCode)
	}
	if r := fetch(after[0]); r.ErrorCode != 0 || r.HighWatermark != 3 {
		t.Fatalf("fetch at the renewed epoch: error %d, high watermark %d", r.ErrorCode, r.HighWatermark)
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "renew"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = after[0], before[0]
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if r := dpRaw(t, tb2, req, 4).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]; r.ErrorCode != 0 || r.LeaderEpoch != before[0] || r.EndOffset != 3 {
		t.Fatalf("the end of the epoch before the crash: %+v", r)
	}
}
