package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteRecords(t *testing.T, tb *testBroker, topic string, partition int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return dpRaw(t, tb, req, 2).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

func TestDeleteRecords(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "dr", 1, nil)
	dpTopic(t, tb, "drc", 1, map[string]*string{"cleanup.policy": strp("compact")})
	for i := 0; i < 5; i++ {
		dpProduce(t, tb, dpProduceReq("dr", 0, dpBatch(t, -1, -1, -1, 2))) // offsets 0..9
	}
	dpProduce(t, tb, dpProduceReq("drc", 0, dpBatch(t, -1, -1, -1, 2)))

	if r := deleteRecords(t, tb, "dr", 0, 4); r.ErrorCode != 0 || r.LowWatermark != 4 {
		t.Fatalf("delete to 4: %+v", r)
	}
	if r := deleteRecords(t, tb, "dr", 0, 2); r.ErrorCode != 0 || r.LowWatermark != 4 {
		t.Fatalf("delete below the start: %+v", r)
	}
	if r := deleteRecords(t, tb, "dr", 0, 11); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("delete past the high watermark: %+v", r)
	}
	if r := deleteRecords(t, tb, "drc", 0, 1); r.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("delete on a compacted topic: %+v", r)
	}
	if r := deleteRecords(t, tb, "nope", 0, 1); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
	// Reads below the new start are out of range; earliest moved.
	if r := listOffsets(t, tb, "dr", 0, -2)[0]; r.Offset != 4 {
		t.Fatalf("earliest after delete: %d", r.Offset)
	}
	rc := tb.raw()
	if p := dpFetchRaw(t, rc, dpFetchReq("dr", map[int32]int64{0: 2}, 0, 1), 1).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the start: %d", p.ErrorCode)
	}
	// The new start survives a restart; -1 deletes up to the high watermark.
	tb.restart()
	if r := listOffsets(t, tb, "dr", 0, -2)[0]; r.Offset != 4 {
		t.Fatalf("earliest after restart: %d", r.Offset)
	}
	if r := deleteRecords(t, tb, "dr", 0, -1); r.ErrorCode != 0 || r.LowWatermark != 10 {
		t.Fatalf("delete to the high watermark: %+v", r)
	}
}

// The data-path admin APIs through kadm, as tools use them.
func TestDataPathWithKadm(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "ka", 2, nil)
	for p := int32(0); p < 2; p++ {
		dpProduce(t, tb, dpProduceReq("ka", p, dpBatch(t, -1, -1, -1, 6)))
	}
	adm := tb.admin()
	ctx := dpCtx(t, 20*time.Second)

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "ka", Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := dr.Lookup("ka", 0); !ok || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("kadm DeleteRecords: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "ka")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "ka")
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := starts.Lookup("ka", 0)
	s1, _ := starts.Lookup("ka", 1)
	e1, _ := ends.Lookup("ka", 1)
	if s0.Offset != 4 || s1.Offset != 0 || e1.Offset != 6 || s0.Err != nil || e1.Err != nil {
		t.Fatalf("start %+v %+v, end %+v", s0, s1, e1)
	}
	var ler kadm.OffsetForLeaderEpochRequest
	ler.Add("ka", 1, 0)
	le, err := adm.OffsetForLeaderEpoch(ctx, ler)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := le["ka"][1]; !ok || r.Err != nil || r.EndOffset != 6 {
		t.Fatalf("kadm OffsetForLeaderEpoch: %+v", r)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"ka": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	sorted := dirs.Sorted()
	if len(sorted) != 1 || sorted[0].Err != nil || sorted[0].Size() <= 0 {
		t.Fatalf("kadm DescribeAllLogDirs: %+v", sorted)
	}
}
