package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// produceAt appends one batch whose records carry the given timestamps.
func produceAt(t *testing.T, tb *testBroker, topic string, ts ...int64) {
	t.Helper()
	b := batch.NewBuilder()
	b.BaseTimestamp = ts[0]
	for _, x := range ts {
		b.AddAt(x, []byte("k"), []byte("v"))
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if p := dpProduce(t, tb, dpProduceReq(topic, 0, raw)); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
}

func listOffsets(t *testing.T, tb *testBroker, topic string, partition int32, ts ...int64) []kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, x := range ts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, x, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := dpRaw(t, tb, req, 11).(*kmsg.ListOffsetsResponse)
	var out []kmsg.ListOffsetsResponseTopicPartition
	for _, t := range resp.Topics {
		out = append(out, t.Partitions...)
	}
	return out
}

func TestListOffsets(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "lo", 1, nil)
	if r := listOffsets(t, tb, "lo", 0, -1)[0]; r.ErrorCode != 0 || r.Offset != 0 {
		t.Fatalf("latest of an empty log: %+v", r)
	}
	if r := listOffsets(t, tb, "lo", 0, -3)[0]; r.ErrorCode != 0 || r.Offset != -1 || r.Timestamp != -1 {
		t.Fatalf("max timestamp of an empty log: %+v", r)
	}
	// Recent timestamps (base + small deltas), so that retention.ms never
	// removes the data while the test runs.
	base := time.Now().Add(-time.Hour).UnixMilli()
	produceAt(t, tb, "lo", base+1000, base+1001, base+1002) // offsets 0-2
	produceAt(t, tb, "lo", base+5000, base+3000)            // 3-4
	produceAt(t, tb, "lo", base+2000)                       // 5

	cases := []struct {
		ts, offset, timestamp int64
	}{
		{-2, 0, -1}, {-1, 6, -1}, {-4, 0, -1}, {-5, -1, -1}, {-6, -1, -1}, {-3, 3, base + 5000},
		{base, 0, base + 1000}, {base + 1001, 1, base + 1001}, {base + 1003, 3, base + 5000},
		{base + 2500, 3, base + 5000}, {base + 5000, 3, base + 5000}, {base + 5001, -1, -1},
	}
	for _, c := range cases {
		r := listOffsets(t, tb, "lo", 0, c.ts)[0]
		if r.ErrorCode != 0 || r.Offset != c.offset || r.Timestamp != c.timestamp {
			t.Errorf("timestamp %d: offset %d ts %d err %d, want offset %d ts %d", c.ts, r.Offset, r.Timestamp, r.ErrorCode, c.offset, c.timestamp)
		}
		if wantEpoch := int32(0); c.offset >= 0 && r.LeaderEpoch != wantEpoch {
			t.Errorf("timestamp %d: leader epoch %d", c.ts, r.LeaderEpoch)
		}
	}

	// The same partition twice, unknown partitions, a future leader epoch.
	for _, r := range listOffsets(t, tb, "lo", 0, -1, -2) {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate partition: error %d", r.ErrorCode)
		}
	}
	if r := listOffsets(t, tb, "lo", 1, -1)[0]; r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %d", r.ErrorCode)
	}
	if r := listOffsets(t, tb, "nope", 0, -1)[0]; r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %d", r.ErrorCode)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "lo"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, 3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if r := dpRaw(t, tb, req, 10).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; r.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("future leader epoch: %d", r.ErrorCode)
	}
}

// Finding 14 of docs/reliability.md: after a clean restart partitions are
// loaded on first use; ListOffsets (latest, read_uncommitted and
// read_committed) of a partition not loaded yet answers its real offsets,
// never 0.
func TestListOffsetsOfDeferredPartition(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "lod", 2, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	produceAt(t, tb, "lod", base, base+1, base+2)
	noDeferredLoading.Store(true) // the background loader would race with the check below
	defer noDeferredLoading.Store(false)
	tb.restart()
	l := tb.broker().logs.Get("lod", 0)
	if l == nil || l.Loaded() {
		t.Fatalf("lod-0 after a clean restart: log %v, want one not loaded yet", l)
	}
	for _, committed := range []bool{true, false} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		if committed {
			req.IsolationLevel = 1
		}
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lod"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := dpRaw(t, tb, req, 11).(*kmsg.ListOffsetsResponse)
		if r := resp.Topics[0].Partitions[0]; r.ErrorCode != 0 || r.Offset != 3 {
			t.Fatalf("read_committed=%v latest of a partition not loaded yet: offset %d error %d, want 3", committed, r.Offset, r.ErrorCode)
		}
	}
}
