package broker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// A follower asks its leader for what the replica.fetch.* settings say, and
// with limits smaller than one batch it still replicates everything: the
// leader sends each partition's first batch whatever its size (KIP-74), and
// no more than that once the limit is reached.
func TestClusterReplicaFetchLimits(t *testing.T) {
	tc := startTestCluster(t, 2, map[string]string{
		"replica.fetch.max.bytes":          "2048",
		"replica.fetch.response.max.bytes": "30000",
		"replica.fetch.min.bytes":          "3",
		"replica.fetch.wait.max.ms":        "200",
	})
	waitImages(t, tc, "two live brokers", func(im *metadata.Image) bool { return len(im.LiveBrokers()) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createAssigned(t, ctx, tc, "lim", [][]int32{{1, 2}, {1, 2}}, nil)
	waitImages(t, tc, "lim led by 1 with both in sync", func(im *metadata.Image) bool {
		for i := range int32(2) {
			if p, ok := im.Partition("lim", i); !ok || p.Leader != 1 || len(p.ISR) != 2 {
				return false
			}
		}
		return true
	})
	// What the follower asked for, and the sizes of what it got (the
	// answer's bytes are its pooled buffer: only sizes are kept).
	type partSeen struct{ bytes, batches int }
	type fetchSeen struct {
		req   *kmsg.FetchRequest
		parts []partSeen
	}
	produced := make(chan struct{})
	release := sync.OnceFunc(func() { close(produced) })
	defer release()
	var held atomic.Bool
	var mu sync.Mutex
	var seen []fetchSeen
	hook := func(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
		f := fetchSeen{req: req}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				ps := partSeen{bytes: len(rp.RecordBatches)}
				for b := rp.RecordBatches; len(b) >= 12; ps.batches++ {
					n := 12 + int(binary.BigEndian.Uint32(b[8:12])) // base offset, then the batch length
					if n > len(b) {
						break
					}
					b = b[n:]
				}
				f.parts = append(f.parts, ps)
			}
		}
		mu.Lock()
		seen = append(seen, f)
		mu.Unlock()
		// The first fetch seen holds the fetcher until everything is
		// produced: the next ones find a backlog of several batches per
		// partition, more than either limit allows in one answer.
		if held.CompareAndSwap(false, true) {
			select {
			case <-produced:
			case <-time.After(30 * time.Second):
			}
		}
	}

	tc.nodes[1].broker().cluster.fetchSeen.Store(&hook)
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("lim"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// Batches of about 10 KiB each: five times the partition limit.
	for round := range 6 {
		var recs []*kgo.Record
		for i := range 20 {
			v := make([]byte, 1000)
			rand.Read(v) // incompressible
			recs = append(recs, &kgo.Record{Value: v, Partition: int32((round + i) % 2)})
		}
		if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	release()
	for i := range int32(2) {
		leo := tc.nodes[0].broker().logs.Get("lim", i).LogEndOffset()
		waitFor(t, fmt.Sprintf("the follower to replicate partition %d", i), func() bool {
			l := tc.nodes[1].broker().logs.Get("lim", i)
			return l != nil && leo >= 60 && l.LogEndOffset() == leo
		})
	}
	tc.nodes[1].broker().cluster.fetchSeen.Store(nil)

	mu.Lock()
	defer mu.Unlock()
	large := 0
	for k, f := range seen {
		req := f.req
		if req.MaxBytes != 30000 || req.MinBytes != 3 || req.MaxWaitMillis != 200 {
			t.Fatalf("fetch %d asked for max %d bytes, min %d, wait %d ms; want 30000, 3, 200", k, req.MaxBytes, req.MinBytes, req.MaxWaitMillis)
		}
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if rp.PartitionMaxBytes != 2048 {
					t.Fatalf("fetch %d asked for %d bytes of %s/%d; want 2048", k, rp.PartitionMaxBytes, rt.Topic, rp.Partition)
				}
			}
		}
		total, nonEmpty := 0, 0
		for _, ps := range f.parts {
			total += ps.bytes
			if ps.bytes > 0 {
				nonEmpty++
			}
			if ps.bytes > 2048 { // over the partition limit: one batch, whole
				large++
				if ps.batches != 1 {
					t.Fatalf("answer %d holds %d bytes in %d whole batches for one partition; want one batch once over 2048 bytes", k, ps.bytes, ps.batches)
				}
			}
		}
		// Over the answer limit only by the first batch, and then alone.
		if total > 30000 && nonEmpty != 1 {
			t.Fatalf("answer %d holds %d bytes from %d partitions; want at most 30000, or one first batch alone", k, total, nonEmpty)
		}
	}
	// Six batches per partition, each over both limits: at least twelve
	// answers, one batch each.
	if large < 12 {
		t.Fatalf("%d answers carried a batch over the partition limit (%d fetches); want at least 12, one per batch", large, len(seen))
	}
}

// Unset, the settings are Kafka's defaults; values Kafka takes without a
// check but no fetcher can use are read as the nearest usable ones; the
// largest answer read is what was asked for plus one batch of the largest
// produce request. (Kafka's relations between them are refused by the
// config package, TestNewBrokerRejects.)
func TestFetchLimitsRead(t *testing.T) {
	f := parseFetchLimits(&config.Broker{Raw: map[string]string{}})
	want := fetchLimits{partitionBytes: 1 << 20, responseBytes: 10 << 20, minBytes: 1, wait: 500 * time.Millisecond,
		timeout: 30 * time.Second, answerBytes: 10<<20 + 100<<20 + 1<<20}
	if f != want {
		t.Fatalf("defaults %+v, want %+v", f, want)
	}
	f = parseFetchLimits(&config.Broker{Raw: map[string]string{
		"replica.fetch.min.bytes": "-5", "replica.fetch.wait.max.ms": "-1", "replica.socket.timeout.ms": "0",
		"replica.fetch.response.max.bytes": "2147483647", "socket.request.max.bytes": "2147483647"}})
	want = fetchLimits{partitionBytes: 1 << 20, responseBytes: math.MaxInt32, minBytes: 0, wait: 0,
		timeout: 30 * time.Second, answerBytes: math.MaxInt32}
	if f != want {
		t.Fatalf("edge values read as %+v, want %+v", f, want)
	}
}
