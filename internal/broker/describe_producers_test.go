package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeProducers reports the idempotent-producer state Produce keeps, and
// that state survives a restart.
func TestDescribeProducers(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 20*time.Second)
	dpTopic(t, tb, "dp", 2, nil)

	cl := tb.client(kgo.DefaultProduceTopic("dp"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	before := time.Now().UnixMilli()
	for i := 0; i < 3; i++ { // three batches: sequences 0, 1, 2
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	after := time.Now().UnixMilli()
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("producer id: %v", err)
	}

	check := func(when string) {
		t.Helper()
		var set kadm.TopicsSet
		set.Add("dp", 0, 1)
		got, err := tb.admin().DescribeProducers(ctx, set)
		if err != nil {
			t.Fatalf("%s: describe: %v", when, err)
		}
		p0 := got["dp"].Partitions[0]
		if p0.Err != nil || len(p0.ActiveProducers) != 1 {
			t.Fatalf("%s: dp-0: %+v", when, p0)
		}
		ap, ok := p0.ActiveProducers[pid]
		if !ok || ap.ProducerEpoch != epoch || ap.LastSequence != 2 || ap.CoordinatorEpoch != -1 || ap.CurrentTxnStartOffset != -1 ||
			ap.LastTimestamp < before || ap.LastTimestamp > after {
			t.Fatalf("%s: producer %d epoch %d: %+v", when, pid, epoch, p0.ActiveProducers)
		}
		if p1 := got["dp"].Partitions[1]; p1.Err != nil || len(p1.ActiveProducers) != 0 {
			t.Fatalf("%s: dp-1: %+v", when, p1)
		}
	}
	check("live")
	tb.restart()
	check("after restart")

	// Errors per partition: unknown topic, partition out of range, illegal name.
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"dp", []int32{0, 5}}, {"nope", []int32{0, 1}}, {"bad/name", []int32{0}}} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = tp.topic, tp.parts
		req.Topics = append(req.Topics, rt)
	}
	// Raw: kgo would route (and refuse) unknown partitions itself.
	rc := tb.raw()
	rc.send(req, 1)
	resp := kmsg.NewPtrDescribeProducersResponse()
	rc.recv(resp)
	if len(resp.Topics) != 3 {
		t.Fatalf("topics: %+v", resp.Topics)
	}
	if p := resp.Topics[0].Partitions; len(p) != 2 || p[0].ErrorCode != 0 || len(p[0].ActiveProducers) != 1 ||
		p[1].Partition != 5 || p[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("dp: %+v", p)
	}
	if p := resp.Topics[1].Partitions; len(p) != 2 || p[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || p[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("nope: %+v", p)
	}
	if p := resp.Topics[2].Partitions; len(p) != 1 || p[0].ErrorCode != kerr.InvalidTopicException.Code || p[0].ErrorMessage == nil {
		t.Errorf("bad/name: %+v", p)
	}
}
