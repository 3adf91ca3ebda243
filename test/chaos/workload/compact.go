package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CompactTopic is the compaction workload's topic: cleanup.policy=compact,
// small segments and an eager cleaner, so that it is compacted during the
// run.
const CompactTopic = "chaos-compact"

// compactItems is how many record keys the workload writes (item i always
// goes to partition i % partitions).
const compactItems = 24

// CompactTopicConfigs are the compacted topic's configs.
var CompactTopicConfigs = map[string]string{
	"cleanup.policy":            "compact",
	"segment.bytes":             "1048576", // Apache Kafka 4's minimum
	"segment.ms":                "2000",
	"min.cleanable.dirty.ratio": "0.01",
	"min.compaction.lag.ms":     "0",
	"delete.retention.ms":       "3000",
}

// CreateCompactTopic creates the compacted topic.
func (e *Env) CreateCompactTopic(ctx context.Context, replication int16, minInsync int) error {
	configs := map[string]*string{}
	for k, v := range CompactTopicConfigs {
		configs[k] = &v
	}
	if minInsync > 0 {
		v := strconv.Itoa(minInsync)
		configs["min.insync.replicas"] = &v
	}
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		resp, err := adm.CreateTopic(ctx, int32(e.Partitions), replication, configs, CompactTopic)
		if err == nil && resp.Err == nil {
			return nil
		}
		if err == nil {
			err = resp.Err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create topic %s: %w", CompactTopic, err)
		}
		e.Logf("create topic %s: %v (retrying)", CompactTopic, err)
		wait(ctx, 500*time.Millisecond)
	}
}

func itemName(i int) string { return "k" + strconv.Itoa(i) }

// Compact runs idempotent acks=all producer processes, one after another,
// writing to the compacted topic: each operation writes one record key a
// new value (unique in the run) or, one time in eight, a tombstone.
func (e *Env) Compact(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	for ctx.Err() == nil {
		proc := e.NextProcess()
		cl, err := kgo.NewClient(append(e.baseOpts(),
			kgo.DefaultProduceTopic(CompactTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(8*time.Second),
			kgo.ProduceRequestTimeout(5*time.Second),
		)...)
		if err != nil {
			e.Logf("compact producer: %v", err)
			return
		}
		for ctx.Err() == nil {
			wait(ctx, 2*e.WriterPause)
			i := rng.IntN(compactItems)
			p := int32(i % e.Partitions)
			m := history.Mop{F: history.MKV, Key: Key(CompactTopic, p), Item: itemName(i)}
			rec := e.stamp(&kgo.Record{Partition: p, Key: []byte(m.Item)})
			if rng.IntN(8) != 0 {
				v := e.NextValue()
				m.Value = history.I64(v)
				rec.Value = []byte(strconv.FormatInt(v, 10))
			}
			e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FKVSend, Client: "franz-go", Value: []history.Mop{m}})
			pctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
			res := cl.ProduceSync(pctx, rec)
			cancel()
			err := res.FirstErr()
			typ := history.OK
			if err != nil {
				typ = history.Info
			} else {
				m.Offset = history.I64(rec.Offset)
			}
			e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FKVSend, Client: "franz-go", Value: []history.Mop{m}, Error: errText(err)})
			if err != nil {
				break
			}
		}
		cl.Close()
	}
}

// FinalCompactRead reads the compacted topic from the start to its high
// watermark and records the latest record of each record key (final-kv).
func (e *Env) FinalCompactRead(ctx context.Context) error {
	proc := e.NextProcess()
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, CompactTopic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		wait(ctx, 300*time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("final compacted read: end offsets: %w", err)
	}
	targets := map[string]int64{}
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		targets[Key(o.Topic, o.Partition)] = o.Offset
		parts[o.Partition] = kgo.NewOffset().AtStart()
	})
	rc, err := kgo.NewClient(append(e.baseOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{CompactTopic: parts}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return err
	}
	defer rc.Close()
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FKVFinal, Client: "franz-go", Targets: targets})
	latest := map[string]history.Mop{}
	pos := map[string]int64{}
	done := func() bool {
		for k, t := range targets {
			if pos[k] < t {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := rc.PollFetches(pctx)
		cancel()
		progressed := map[string]bool{}
		fs.EachRecord(func(r *kgo.Record) {
			progressed[Key(r.Topic, r.Partition)] = true
			k := Key(r.Topic, r.Partition)
			pos[k] = max(pos[k], r.Offset+1)
			m := history.Mop{F: history.MKV, Key: k, Item: string(r.Key), Offset: history.I64(r.Offset)}
			if r.Value != nil {
				if v, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
					m.Value = history.I64(v)
				}
			}
			if old, ok := latest[m.Item]; !ok || *old.Offset < r.Offset {
				latest[m.Item] = m
			}
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			// Compaction leaves gaps: the high watermark is progress too.
			k := Key(p.Topic, p.Partition)
			if p.HighWatermark > 0 && len(p.Records) == 0 && p.Err == nil {
				pos[k] = max(pos[k], min(p.HighWatermark, targets[k]))
			}
		})
		// A partition whose log ends in batches the cleaner emptied (a
		// last tombstone removed) gives the consumer nothing more, and
		// franz-go returns no fetch without records: ask its leader
		// whether anything is left below the target.
		for k, t := range targets {
			if pos[k] < t && !progressed[k] {
				pos[k] = max(pos[k], e.recordsLeftFrom(ctx, cl, k, pos[k], t))
			}
		}
	}
	var ms []history.Mop
	for i := range compactItems {
		if m, ok := latest[itemName(i)]; ok {
			ms = append(ms, m)
		}
	}
	op := history.Op{Process: proc, Type: history.OK, F: history.FKVFinal, Client: "franz-go", Targets: targets, Value: ms}
	if !done() {
		op.Incomplete = true
		op.Error = "did not reach every partition's high watermark"
	}
	e.Rec.Record(op)
	return nil
}

// recordsLeftFrom fetches partition key of the compacted topic from its
// leader at offset from and returns how far the log holds no record: to
// (or the high watermark) when only emptied batches, or none, lie between,
// else the offset of the first batch holding records (from on any error).
func (e *Env) recordsLeftFrom(ctx context.Context, cl *kgo.Client, key string, from, to int64) int64 {
	i := strings.LastIndexByte(key, '/')
	part, err := strconv.Atoi(key[i+1:])
	if i < 0 || err != nil {
		return from
	}
	topic := key[:i]
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(mctx, topic)
	if err != nil {
		return from
	}
	pd, ok := md.Topics[topic].Partitions[int32(part)]
	if !ok || pd.Leader < 0 {
		return from
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md.Topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = int32(part), from, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(mctx, cl.Broker(int(pd.Leader)))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return from
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return from
	}
	// (The workload writes one record per batch, so a batch the cleaner
	// left records in holds no removed offset after them worth skipping.)
	at, raw := from, p.RecordBatches
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if len(raw) < 61 || b.ReadFrom(raw) != nil || 12+int(b.Length) > len(raw) {
			return min(at, to) // a batch cut short by MaxBytes: only up to it
		}
		raw = raw[12+int(b.Length):]
		last := b.FirstOffset + int64(b.LastOffsetDelta)
		if last < at {
			continue
		}
		if b.NumRecords > 0 && b.Attributes&0x20 == 0 {
			return min(max(at, b.FirstOffset), to) // records left: the consumer gets them
		}
		at = last + 1 // an emptied batch, or a control batch
	}
	// Every batch up to the high watermark seen, none with records.
	return min(max(at, p.HighWatermark), to)
}
