package broker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

// The per-topic counters count what produce appended (records, and bytes
// equal to the log's size) and what consumers fetched, are exported at
// /metrics under Sluice's and Kafka's names, and go with the topic.
func TestTopicTrafficMetrics(t *testing.T) {
	tb := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0"})
	dpTopic(t, tb, "traffic", 2, nil)
	dpTopic(t, tb, "idle", 1, nil)
	cl := tb.client(kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const n = 200
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: "traffic", Partition: int32(i % 2), Value: bytes.Repeat([]byte{'x'}, 100)})
	}
	if err := cl.ProduceSync(dpCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got := tb.srv.TopicTotals()["traffic"]
	if got.MessagesIn != n {
		t.Fatalf("messages in %d, want %d", got.MessagesIn, n)
	}
	var size int64
	dirs, err := tb.admin().DescribeAllLogDirs(dpCtx(t, 30*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		for _, p := range d.Topics["traffic"] {
			size += p.Size
		}
	})
	if got.BytesIn != size || size < n*100 {
		t.Fatalf("bytes in %d, the log holds %d bytes", got.BytesIn, size)
	}
	if _, ok := tb.srv.TopicTotals()["idle"]; ok {
		t.Fatal("a topic without traffic has counters")
	}
	if c := dpConsume(t, tb, "traffic", n); len(c) != n {
		t.Fatalf("consumed %d", len(c))
	}
	if out := tb.srv.TopicTotals()["traffic"].BytesOut; out < size {
		t.Fatalf("bytes out %d, less than the %d bytes consumed", out, size)
	}
	metricsBody := func() string {
		resp, err := http.Get("http://" + tb.srv.MetricsAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	body := metricsBody()
	for _, want := range []string{
		fmt.Sprintf("sluice_topic_messages_in_total{topic=\"traffic\"} %d\n", n),
		fmt.Sprintf("kafka_server_brokertopicmetrics_messagesin_total{topic=\"traffic\"} %d\n", n),
		fmt.Sprintf("sluice_topic_bytes_in_total{topic=\"traffic\"} %d\n", size),
		fmt.Sprintf("kafka_server_brokertopicmetrics_bytesin_total{topic=\"traffic\"} %d\n", size),
		"sluice_topic_bytes_out_total{topic=\"traffic\"} ",
		"kafka_server_brokertopicmetrics_bytesout_total{topic=\"traffic\"} ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "topic="))
		}
	}
	if _, err := tb.admin().DeleteTopic(dpCtx(t, 30*time.Second), "traffic"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted topic's counters to go", func() bool {
		_, ok := tb.srv.TopicTotals()["traffic"]
		return !ok
	})
	if body := metricsBody(); strings.Contains(body, `topic="traffic"`) {
		t.Fatalf("deleted topic still exported:\n%s", grepLines(body, `topic="traffic"`))
	}
}
