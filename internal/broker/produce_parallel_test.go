package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// bigBatch builds an uncompressed batch of n records of size bytes each.
func bigBatch(t *testing.T, n, size int, fill byte) []byte {
	t.Helper()
	b := batch.NewBuilder()
	now := time.Now().UnixMilli()
	b.BaseTimestamp = now
	for i := 0; i < n; i++ {
		b.AddAt(now, []byte{fill, byte(i)}, bytes.Repeat([]byte{fill}, size))
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A produce large enough to append its partitions concurrently answers
// every partition in request order with its own offsets and errors, and the
// records land where the answers say.
func TestProduceParallelPartitions(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "par", 8, nil)

	good := bigBatch(t, 64, 1024, 'a') // 64 KiB+ per partition, 512 KiB+ in all
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff

	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "par"
	for p := int32(0); p < 8; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = good
		if p == 5 {
			rp.Records = corrupt
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	bad := kmsg.NewProduceRequestTopicPartition()
	bad.Partition = 42
	bad.Records = good
	rt.Partitions = append(rt.Partitions, bad)
	req.Topics = append(req.Topics, rt)
	if !parallelProduce(produceItems(req)) {
		t.Fatal("request not large enough to exercise the concurrent path")
	}

	for round := int64(0); round < 2; round++ {
		resp := tb.request(req).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 9 {
			t.Fatalf("response shape %+v", resp.Topics)
		}
		for i, sp := range resp.Topics[0].Partitions {
			want := rt.Partitions[i].Partition
			if sp.Partition != want {
				t.Fatalf("answer %d is for partition %d, want %d (request order)", i, sp.Partition, want)
			}
			switch want {
			case 5:
				if sp.ErrorCode != kerr.CorruptMessage.Code {
					t.Fatalf("corrupt batch: code %d", sp.ErrorCode)
				}
			case 42:
				if sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("unknown partition: code %d", sp.ErrorCode)
				}
			default:
				if sp.ErrorCode != 0 || sp.BaseOffset != round*64 {
					t.Fatalf("round %d partition %d: code %d base offset %d", round, want, sp.ErrorCode, sp.BaseOffset)
				}
			}
		}
	}
	for p := int32(0); p < 8; p++ {
		want := int64(128)
		if p == 5 {
			want = 0
		}
		l := tb.broker().logs.Get("par", p)
		if end := l.LogEndOffset(); end != want {
			t.Fatalf("partition %d ends at %d, want %d", p, end, want)
		}
	}
}

// A partition named twice in one request keeps its batches in request order
// (the sequential path).
func TestProduceSamePartitionTwiceInOrder(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "twice", 2, nil)
	first := bigBatch(t, 100, 2048, 'x')
	second := bigBatch(t, 10, 2048, 'y')

	req := kmsg.NewPtrProduceRequest()
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "twice"
	for _, recs := range [][]byte{first, second} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = 1
		rp.Records = recs
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	if parallelProduce(produceItems(req)) {
		t.Fatal("a partition named twice must not be appended concurrently")
	}
	resp := tb.request(req).(*kmsg.ProduceResponse)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[1].ErrorCode != 0 || ps[0].BaseOffset != 0 || ps[1].BaseOffset != 100 {
		t.Fatalf("answers %+v", ps)
	}
}

// produceItems lists a request's partitions as handleProduce does.
func produceItems(req *kmsg.ProduceRequest) []produceItem {
	var work []produceItem
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			work = append(work, produceItem{topic: rt.Topic, rp: rp})
		}
	}
	return work
}
