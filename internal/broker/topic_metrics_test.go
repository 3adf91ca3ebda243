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

// On a cluster, the leader counts the produced records; followers' appends
// and replica fetches are not counted (bytes out is consumers' only).
func TestClusterTopicTrafficMetrics(t *testing.T) {
	tc := startTestCluster(t, 2, nil)
	adm := tc.admin()
	waitCluster(t, adm, "two live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 2 })
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(c, 1, 2, nil, "mirrored"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	inSync := func(md kadm.Metadata) bool {
		ps := md.Topics["mirrored"].Partitions
		return len(ps) == 1 && ps[0].Leader >= 1 && len(ps[0].ISR) == 2
	}
	before := waitCluster(t, adm, "two in-sync replicas", inSync).Topics["mirrored"].Partitions[0]
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("mirrored"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	const n = 20
	for i := range n {
		if err := pr.ProduceSync(c, kgo.StringRecord(fmt.Sprintf("r-%02d", i))).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for i, node := range tc.nodes {
		l := node.broker().logs.Get("mirrored", 0)
		if l == nil {
			t.Fatalf("node %d has no replica", i+1)
		}
		waitFor(t, fmt.Sprintf("node %d to hold the records", i+1), func() bool { return l.LogEndOffset() >= n })
	}
	var msgs int64
	for i, node := range tc.nodes {
		tt := node.srv.TopicTotals()["mirrored"]
		msgs += tt.MessagesIn
		if tt.BytesOut != 0 {
			t.Errorf("node %d counts %d bytes out: replica fetches counted as consumers'", i+1, tt.BytesOut)
		}
	}
	if msgs < n {
		t.Fatalf("the nodes count %d messages in, want at least %d", msgs, n)
	}
	after := waitCluster(t, adm, "two in-sync replicas", inSync).Topics["mirrored"].Partitions[0]
	if after.Leader != before.Leader || after.LeaderEpoch != before.LeaderEpoch {
		t.Logf("leadership moved (%d/%d to %d/%d): the per-node split is not checked", before.Leader, before.LeaderEpoch, after.Leader, after.LeaderEpoch)
	} else {
		for i, node := range tc.nodes {
			tt := node.srv.TopicTotals()["mirrored"]
			if int32(i+1) == before.Leader && tt.MessagesIn != n {
				t.Errorf("leader %d counts %d messages in, want %d", i+1, tt.MessagesIn, n)
			}
			if int32(i+1) != before.Leader && (tt.MessagesIn != 0 || tt.BytesIn != 0) {
				t.Errorf("follower %d counts %+v: its replica appends were counted", i+1, tt)
			}
		}
	}
	// Deleting the topic drops its counters on every node.
	if res, err := adm.DeleteTopic(c, "mirrored"); err != nil || res.Err != nil {
		t.Fatalf("delete topic: %v %v", err, res.Err)
	}
	for i, node := range tc.nodes {
		waitFor(t, fmt.Sprintf("node %d to drop the deleted topic's counters", i+1), func() bool {
			_, ok := node.srv.TopicTotals()["mirrored"]
			return !ok
		})
	}
}
