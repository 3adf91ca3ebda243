package broker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// BenchmarkProduceAppend is the produce path of one partition (validation,
// append to the log, the per-topic counters) for a batch of 10 records of
// 100 bytes, acks=1, without the network: compare it with and without the
// counters.
func BenchmarkProduceAppend(b *testing.B) {
	tb := startTestBroker(b, testOptions{Quiet: true})
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tb.admin().CreateTopic(c, 1, 1, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	br := tb.broker()
	recs := make([]batch.KV, 10)
	for i := range recs {
		recs[i] = batch.KV{Key: []byte{'k', byte('0' + i)}, Value: bytes.Repeat([]byte{'v'}, 100)}
	}
	records := batch.NewBatch(0, time.Now().UnixMilli(), recs...)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 11, 1
	buf := make([]byte, len(records))
	b.SetBytes(int64(len(records)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, records)
		sp := kmsg.NewProduceResponseTopicPartition()
		it := produceItem{sp: &sp, topic: "bench", rp: kmsg.ProduceRequestTopicPartition{Partition: 0, Records: buf}}
		if err := br.appendPartition(&it, req); err != nil {
			b.Fatal(err)
		}
	}
}
