package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// workload is one row of the comparison.
type workload struct {
	Name       string  `json:"name"`
	Kind       string  `json:"kind"` // produce, durable, consume, fetch, latency
	RecordSize int     `json:"record_size"`
	Partitions int     `json:"partitions"`
	Codec      string  `json:"codec"`
	RateMBps   float64 `json:"rate_mb_s,omitempty"` // latency: fixed offered load
}

// maxRunBytes caps what one produce run may write, whatever its duration,
// so that a fast broker cannot fill the disk (the topic is deleted after the
// run). The run's throughput is still bytes over elapsed time.
const maxRunBytes = 6 << 30

// measurement is what one run of a workload against one target yields.
type measurement struct {
	Bytes   int64   // record value bytes moved
	Records int64   // records moved
	Seconds float64 // wall time measured
	// Latency (latency workload only), milliseconds.
	P50, P99, P999 float64
	Samples        int
}

func codecOpt(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown codec %q", name)
}

// producerOpts are the client settings shared by every produce workload:
// franz-go's defaults (acks=all, idempotent, up to 5 requests in flight,
// 1 MiB batches, linger 10 ms) with the codec chosen and the buffer sized in
// bytes (64 MiB) rather than records, so 100 B and 1 KiB records see the
// same backpressure. The latency workload sets linger 0.
func producerOpts(addr, topic string, w workload) ([]kgo.Opt, error) {
	codec, err := codecOpt(w.Codec)
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(max(64<<20/w.RecordSize, 1024)),
		kgo.ProduceRequestTimeout(30 * time.Second),
		kgo.RecordDeliveryTimeout(60 * time.Second),
	}, nil
}

// produceFor produces records of w.RecordSize to topic as fast as the
// broker acknowledges them for d, then flushes. The result counts acked
// records only; the clock runs from the first record to the end of the
// flush. stats, if not nil, is called right before and after the timed part.
func produceFor(ctx context.Context, addr, topic string, w workload, d time.Duration, stats func(begin bool)) (measurement, error) {
	opts, err := producerOpts(addr, topic, w)
	if err != nil {
		return measurement{}, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return measurement{}, err
	}
	defer cl.Close()
	vals := payloads(w.RecordSize, 512)

	// Warm up: metadata, producer id, connections.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: vals[0]}).FirstErr(); err != nil {
		return measurement{}, fmt.Errorf("warm-up produce: %w", err)
	}

	var acked, ackedBytes atomic.Int64
	var firstErr atomic.Pointer[error]
	cb := func(r *kgo.Record, err error) {
		if err != nil {
			firstErr.CompareAndSwap(nil, &err)
			return
		}
		acked.Add(1)
		ackedBytes.Add(int64(len(r.Value)))
	}
	if stats != nil {
		stats(true)
	}
	start := time.Now()
	stop := start.Add(d)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Two producing goroutines: one alone cannot saturate the client with
	// 100 B records.
	var wg sync.WaitGroup
	var sentBytes atomic.Int64
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				// Checked every 64 records: the deadline, errors, the
				// context and the per-run byte cap (a disk-space guard).
				if n%64 == 0 && (time.Now().After(stop) || firstErr.Load() != nil ||
					pctx.Err() != nil || sentBytes.Load() >= maxRunBytes) {
					return
				}
				v := vals[(2*n+g)%len(vals)]
				sentBytes.Add(int64(len(v)))
				cl.Produce(pctx, &kgo.Record{Value: v}, cb)
			}
		}()
	}
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		return measurement{}, err
	}
	elapsed := time.Since(start)
	if stats != nil {
		stats(false)
	}
	if e := firstErr.Load(); e != nil {
		return measurement{}, fmt.Errorf("produce: %w", *e)
	}
	return measurement{Bytes: ackedBytes.Load(), Records: acked.Load(), Seconds: elapsed.Seconds()}, nil
}

// fill produces exactly enough records to hold total value bytes into topic
// (not timed) and returns the record count.
func fill(ctx context.Context, addr, topic string, w workload, total int64) (int64, error) {
	opts, err := producerOpts(addr, topic, w)
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	vals := payloads(w.RecordSize, 512)
	n := total / int64(w.RecordSize)
	var firstErr atomic.Pointer[error]
	for i := range n {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		cl.Produce(ctx, &kgo.Record{Value: vals[i%int64(len(vals))]}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if e := firstErr.Load(); e != nil {
		return 0, *e
	}
	return n, nil
}

// consumeAll reads every record of topic from the start with a franz-go
// consumer (direct partition assignment, no group, default fetch sizes) and
// times it. Records are decoded by the client, as an application sees them.
func consumeAll(ctx context.Context, addr, topic string, partitions int, want int64, stats func(bool)) (measurement, error) {
	offs := make(map[int32]kgo.Offset, partitions)
	for p := range partitions {
		offs[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
	)
	if err != nil {
		return measurement{}, err
	}
	defer cl.Close()
	if stats != nil {
		stats(true)
	}
	start := time.Now()
	var n, b int64
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for n < want {
		fs := cl.PollFetches(cctx)
		if err := cctx.Err(); err != nil {
			return measurement{}, fmt.Errorf("consumed %d of %d records: %w", n, want, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return measurement{}, ferr
		}
		fs.EachRecord(func(r *kgo.Record) { n++; b += int64(len(r.Value)) })
	}
	elapsed := time.Since(start)
	if stats != nil {
		stats(false)
	}
	return measurement{Bytes: b, Records: n, Seconds: elapsed.Seconds()}, nil
}

// fetchAll reads every partition of topic to its high watermark with raw
// Fetch requests through the same franz-go client, without decoding records:
// it only walks batch headers to advance offsets. This isolates the broker's
// fetch path from the client's per-record decode cost (which, on 2 shared
// cores, otherwise dominates). Bytes are record-batch bytes on the wire.
func fetchAll(ctx context.Context, addr, topic string, partitions int, stats func(bool)) (measurement, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return measurement{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return measurement{}, err
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return measurement{}, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return measurement{}, err
	}
	next := make([]int64, partitions)
	hwm := make([]int64, partitions)
	for p := range partitions {
		o, ok := ends.Lookup(topic, int32(p))
		if !ok || o.Err != nil {
			return measurement{}, fmt.Errorf("end offset of %s[%d]: %v", topic, p, o.Err)
		}
		hwm[p] = o.Offset
	}
	if stats != nil {
		stats(true)
	}
	start := time.Now()
	var bytesRead, batches int64
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 50 << 20 // Kafka's fetch.max.bytes default
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		for p := range partitions {
			if next[p] >= hwm[p] {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = int32(p)
			rp.FetchOffset = next[p]
			rp.PartitionMaxBytes = 1 << 20 // max.partition.fetch.bytes default
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) == 0 {
			break
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		resp, err := req.RequestWith(fctx, cl)
		if err != nil {
			return measurement{}, err
		}
		if resp.ErrorCode != 0 {
			return measurement{}, fmt.Errorf("fetch error code %d", resp.ErrorCode)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return measurement{}, fmt.Errorf("fetch %s[%d]: error code %d", topic, p.Partition, p.ErrorCode)
				}
				n, nb, last := walkBatches(p.RecordBatches)
				if n > 0 && int(p.Partition) < partitions {
					next[p.Partition] = last + 1
				}
				bytesRead += nb
				batches += n
			}
		}
	}
	elapsed := time.Since(start)
	if stats != nil {
		stats(false)
	}
	return measurement{Bytes: bytesRead, Records: batches, Seconds: elapsed.Seconds()}, nil
}

// walkBatches counts the complete v2 record batches in b and returns their
// number, their bytes and the last offset they cover.
func walkBatches(b []byte) (n, nbytes, last int64) {
	for len(b) >= 61 { // v2 batch header size
		base := int64(binary.BigEndian.Uint64(b[0:]))
		length := int64(int32(binary.BigEndian.Uint32(b[8:])))
		size := 12 + length
		if length <= 0 || size > int64(len(b)) {
			break // a partial batch at the end of a fetch
		}
		lastDelta := int64(int32(binary.BigEndian.Uint32(b[23:])))
		last = base + lastDelta
		n++
		nbytes += size
		b = b[size:]
	}
	return n, nbytes, last
}

// latencyAt produces w.RateMBps of w.RecordSize records for d while a
// consumer in this process reads them; each record carries its send time
// (ns) in its first 8 bytes, so end-to-end latency is consumer receive time
// minus that. The first second is warm-up and not counted.
func latencyAt(ctx context.Context, addr, topic string, w workload, d time.Duration, stats func(bool)) (measurement, error) {
	offs := make(map[int32]kgo.Offset, w.Partitions)
	for p := range w.Partitions {
		offs[int32(p)] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	if err != nil {
		return measurement{}, err
	}
	defer cons.Close()
	opts, err := producerOpts(addr, topic, w)
	if err != nil {
		return measurement{}, err
	}
	// No linger: franz-go's default 10 ms would dominate (and hide) the
	// broker's share of the latency.
	opts = append(opts, kgo.ProducerLinger(0))
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		return measurement{}, err
	}
	defer prod.Close()
	vals := payloads(w.RecordSize, 512)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, w.RecordSize)}).FirstErr(); err != nil {
		return measurement{}, fmt.Errorf("warm-up produce: %w", err)
	}

	warm := time.Now().Add(time.Second)
	start := time.Now()
	end := start.Add(d + time.Second)
	var lats []time.Duration
	var consumed atomic.Int64
	consErr := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				consErr <- nil
				return
			}
			now := time.Now()
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				consErr <- ferr
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				consumed.Add(1)
				sentAt := int64(binary.BigEndian.Uint64(r.Value))
				if sentAt <= 0 {
					return // the warm-up record
				}
				if time.Unix(0, sentAt).After(warm) {
					lats = append(lats, now.Sub(time.Unix(0, sentAt)))
				}
			})
		}
	}()

	if stats != nil {
		stats(true)
	}
	perSec := w.RateMBps * 1e6 / float64(w.RecordSize)
	var perr atomic.Pointer[error]
	tick := time.NewTicker(time.Millisecond)
	var n int64
	for now := range tick.C {
		if now.After(end) || perr.Load() != nil || ctx.Err() != nil {
			break
		}
		due := int64(now.Sub(start).Seconds() * perSec)
		for ; n < due; n++ {
			v := make([]byte, w.RecordSize)
			copy(v, vals[n%int64(len(vals))])
			binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
			prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					perr.CompareAndSwap(nil, &err)
				}
			})
		}
	}
	tick.Stop()
	if err := prod.Flush(ctx); err != nil {
		return measurement{}, err
	}
	// Wait (bounded) for the consumer to see everything, warm-up included.
	var cerr error
	deadline := time.Now().Add(30 * time.Second)
	for consumed.Load() < n+1 && time.Now().Before(deadline) {
		select {
		case cerr = <-consErr:
			deadline = time.Now() // the consumer failed
		case <-time.After(5 * time.Millisecond):
		}
	}
	caughtUp := consumed.Load() >= n+1
	cancel()
	if cerr == nil {
		cerr = <-consErr // the goroutine has exited: lats is ours now
	}
	if cerr == nil && !caughtUp {
		cerr = fmt.Errorf("consumer saw %d of %d records within 30 s", consumed.Load(), n+1)
	}
	elapsed := time.Since(start)
	if stats != nil {
		stats(false)
	}
	if e := perr.Load(); e != nil {
		return measurement{}, fmt.Errorf("produce: %w", *e)
	}
	if cerr != nil {
		return measurement{}, cerr
	}
	if len(lats) == 0 {
		return measurement{}, errors.New("no latency samples")
	}
	slices.Sort(lats)
	pct := func(q float64) float64 {
		i := min(int(q*float64(len(lats))), len(lats)-1)
		return float64(lats[i]) / 1e6
	}
	return measurement{
		Bytes: n * int64(w.RecordSize), Records: n, Seconds: elapsed.Seconds(),
		P50: pct(0.50), P99: pct(0.99), P999: pct(0.999), Samples: len(lats),
	}, nil
}
