// Package workload drives the nodes with real Kafka clients and records what
// each operation did in the history:
//
//   - append (franz-go, and librdkafka through confluent-kafka-go): idempotent
//     acks=all sends of values unique across the run to chosen partitions; an
//     errored send is "maybe written" (info);
//   - txn (franz-go): transactions of sends over several partitions, some
//     deliberately aborted;
//   - consumers (franz-go; librdkafka at read_committed) at read_uncommitted
//     and read_committed, from the log start,
//     re-created now and then (a new process each time);
//   - a watermark observer (ListOffsets: high watermark and last stable
//     offset);
//   - the final read, after every fault has healed.
//
// Every client call has a deadline; every loop ends with its context.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Env is what every workload shares.
type Env struct {
	Rec        *history.Recorder
	Addrs      []string
	Partitions int
	Logf       func(format string, args ...any)
	// WriterPause is the pause between one writer process's operations, and
	// PollPause between a consumer's polls (rate limits: the history stays
	// small enough to check, and the 2-core machine stays usable).
	WriterPause, PollPause time.Duration
	// ACLs: the metadata workload creates and deletes ACL bindings too,
	// and the final views hold them (the nodes run with AclProps).
	ACLs bool

	values atomic.Int64
	procs  atomic.Int64
	// clock is the franz-go producers' clock offset (ns; the client-clock
	// fault), the time their records are stamped with.
	clock atomic.Int64
}

// SetClientClock moves the franz-go producers' clock (the CreateTime of the
// records they write) by d from the real one; 0 puts it back.
func (e *Env) SetClientClock(d time.Duration) { e.clock.Store(int64(d)) }

// stamp gives r the producers' time when their clock is jumped (else the
// client stamps it as usual, when it is produced).
func (e *Env) stamp(r *kgo.Record) *kgo.Record {
	if d := e.clock.Load(); d != 0 {
		r.Timestamp = time.Now().Add(time.Duration(d))
	}
	return r
}

// Topics of the workloads.
const (
	AppendTopic = "chaos-append"
	TxnTopic    = "chaos-txn"
)

// Key names a partition in the history.
func Key(topic string, p int32) string { return topic + "/" + strconv.Itoa(int(p)) }

// wait pauses for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// NextValue is a value never used before in this run.
func (e *Env) NextValue() int64 { return e.values.Add(1) }

// NextProcess is a process number never used before in this run.
func (e *Env) NextProcess() int { return int(e.procs.Add(1)) - 1 }

func (e *Env) baseOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(e.Addrs...),
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.RetryTimeout(5 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// indexOf finds a produced record among those given to ProduceSync, whose
// results come back in the order the records finished.
func indexOf(recs []*kgo.Record, r *kgo.Record) int {
	for i, x := range recs {
		if x == r {
			return i
		}
	}
	panic("ProduceSync returned a record it was not given")
}

// CreateTopics creates the workloads' topics with the given replication
// factor and, when minInsync is above 0, min.insync.replicas.
func (e *Env) CreateTopics(ctx context.Context, replication int16, minInsync int) error {
	var configs map[string]*string
	if minInsync > 0 {
		v := strconv.Itoa(minInsync)
		configs = map[string]*string{"min.insync.replicas": &v}
	}
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []string{AppendTopic, TxnTopic} {
		for {
			resp, err := adm.CreateTopic(ctx, int32(e.Partitions), replication, configs, t)
			if err == nil && resp.Err == nil {
				break
			}
			if err == nil {
				err = resp.Err
			}
			if ctx.Err() != nil {
				return fmt.Errorf("create topic %s: %w", t, err)
			}
			e.Logf("create topic %s: %v (retrying)", t, err)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// AppendFranz runs one franz-go idempotent producer process after another
// until ctx ends. Each operation sends one to three values to random
// partitions of the append topic.
func (e *Env) AppendFranz(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for ctx.Err() == nil {
		proc := e.NextProcess()
		cl, err := kgo.NewClient(append(e.baseOpts(),
			kgo.DefaultProduceTopic(AppendTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(8*time.Second),
			kgo.ProduceRequestTimeout(5*time.Second),
		)...)
		if err != nil {
			e.Logf("append producer: %v", err)
			return
		}
		for ctx.Err() == nil {
			wait(ctx, e.WriterPause)
			n := 1 + rng.IntN(3)
			var recs []*kgo.Record
			var ms []history.Mop
			for range n {
				p := int32(rng.IntN(e.Partitions))
				v := e.NextValue()
				recs = append(recs, e.stamp(&kgo.Record{Partition: p, Value: []byte(strconv.FormatInt(v, 10))}))
				ms = append(ms, history.Mop{F: history.FSend, Key: Key(AppendTopic, p), Value: history.I64(v)})
			}
			e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FSend, Client: "franz-go", Value: ms})
			pctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
			res := cl.ProduceSync(pctx, recs...)
			cancel()
			done := make([]history.Mop, len(ms))
			copy(done, ms)
			var firstErr error
			for _, r := range res { // in completion order, not record order
				if r.Err != nil {
					if firstErr == nil {
						firstErr = r.Err
					}
					continue
				}
				done[indexOf(recs, r.Record)].Offset = history.I64(r.Record.Offset)
			}
			typ := history.OK
			if firstErr != nil {
				typ = history.Info // maybe written
			}
			e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FSend, Client: "franz-go", Value: done, Error: errText(firstErr)})
			if firstErr != nil {
				break // a process that saw an indeterminate result is done
			}
		}
		cl.Close()
	}
}

// Txn runs transactional franz-go producers (one transactional id per slot,
// one process after another) until ctx ends. Each transaction sends two to
// four values to random partitions of the txn topic; about a third are
// aborted on purpose.
func (e *Env) Txn(ctx context.Context, slot int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 2))
	for ctx.Err() == nil {
		proc := e.NextProcess()
		cl, err := kgo.NewClient(append(e.baseOpts(),
			kgo.TransactionalID(fmt.Sprintf("sluice-chaos-%d", slot)),
			kgo.TransactionTimeout(10*time.Second),
			kgo.DefaultProduceTopic(TxnTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(8*time.Second),
			kgo.ProduceRequestTimeout(5*time.Second),
		)...)
		if err != nil {
			e.Logf("txn producer: %v", err)
			return
		}
		for ctx.Err() == nil {
			wait(ctx, e.WriterPause)
			if !e.oneTxn(cl, proc, rng) {
				break
			}
		}
		cl.Close()
	}
}

// oneTxn runs one transaction; false when the client must be replaced.
func (e *Env) oneTxn(cl *kgo.Client, proc int, rng *rand.Rand) bool {
	n := 2 + rng.IntN(3)
	abort := rng.IntN(3) == 0
	var recs []*kgo.Record
	var ms []history.Mop
	for range n {
		p := int32(rng.IntN(e.Partitions))
		v := e.NextValue()
		recs = append(recs, e.stamp(&kgo.Record{Partition: p, Value: []byte(strconv.FormatInt(v, 10))}))
		ms = append(ms, history.Mop{F: history.FSend, Key: Key(TxnTopic, p), Value: history.I64(v)})
	}
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FTxn, Client: "franz-go", Value: ms})
	complete := func(typ string, commitTime *int64, err error) {
		e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FTxn, Client: "franz-go", Value: ms, CommitTime: commitTime, Error: errText(err)})
	}
	if err := cl.BeginTransaction(); err != nil {
		complete(history.Fail, nil, fmt.Errorf("begin: %w", err)) // nothing was sent
		return false
	}
	pctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	res := cl.ProduceSync(pctx, recs...)
	cancel()
	var perr error
	ms = append([]history.Mop(nil), ms...)
	for _, r := range res { // in completion order, not record order
		if r.Err != nil {
			if perr == nil {
				perr = r.Err
			}
			continue
		}
		ms[indexOf(recs, r.Record)].Offset = history.I64(r.Record.Offset)
	}
	endCtx, endCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer endCancel()
	if perr != nil || abort {
		err := cl.EndTransaction(endCtx, kgo.TryAbort)
		if err == nil {
			complete(history.Fail, nil, perr) // aborted: certainly not committed
			return perr == nil
		}
		complete(history.Info, nil, errors.Join(perr, fmt.Errorf("abort: %w", err)))
		return false
	}
	commitAt := history.I64(e.Rec.Now())
	if err := cl.EndTransaction(endCtx, kgo.TryCommit); err != nil {
		complete(history.Info, commitAt, fmt.Errorf("commit: %w", err))
		return false
	}
	complete(history.OK, commitAt, nil)
	return true
}

// Consumer polls every partition of topic from the log start at the given
// isolation level until ctx ends, starting over as a new process every so
// often.
func (e *Env) Consumer(ctx context.Context, topic, iso string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	level := kgo.ReadUncommitted()
	if iso == history.ReadCommitted {
		level = kgo.ReadCommitted()
	}
	parts := map[int32]kgo.Offset{}
	for p := range e.Partitions {
		parts[int32(p)] = kgo.NewOffset().AtStart()
	}
	for ctx.Err() == nil {
		proc := e.NextProcess()
		cl, err := kgo.NewClient(append(e.baseOpts(),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
			kgo.FetchIsolationLevel(level),
			kgo.KeepControlRecords(),
			kgo.FetchMaxWait(500*time.Millisecond),
		)...)
		if err != nil {
			e.Logf("consumer: %v", err)
			return
		}
		polls := 150 + rng.IntN(250)
		for i := 0; i < polls && ctx.Err() == nil; i++ {
			wait(ctx, e.PollPause)
			e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Client: "franz-go", Isolation: iso})
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			ms, wms, _ := collect(fs)
			e.Rec.Record(history.Op{Process: proc, Type: history.OK, F: history.FPoll, Client: "franz-go", Isolation: iso, Value: ms, Watermarks: wms})
		}
		cl.Close()
	}
}

// collect turns fetches into poll mops (data records only) and the last
// watermarks seen per key; next is, per key, the offset after the last record
// or control record seen.
func collect(fs kgo.Fetches) ([]history.Mop, map[string]history.Watermark, map[string]int64) {
	idx := map[string]int{}
	var ms []history.Mop
	wms := map[string]history.Watermark{}
	next := map[string]int64{}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		key := Key(p.Topic, p.Partition)
		if p.Err != nil {
			return
		}
		wms[key] = history.Watermark{HWM: p.HighWatermark, LSO: p.LastStableOffset}
		for _, r := range p.Records {
			next[key] = r.Offset + 1
			if r.Attrs.IsControl() {
				continue
			}
			v, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				v = -1 // not ours: the checker names it a phantom read
			}
			i, ok := idx[key]
			if !ok {
				i = len(ms)
				idx[key] = i
				ms = append(ms, history.Mop{F: history.FPoll, Key: key})
			}
			ms[i].Records = append(ms[i].Records, [2]int64{r.Offset, v})
		}
	})
	if len(wms) == 0 {
		wms = nil
	}
	return ms, wms, next
}

// Watermarks observes every partition's high watermark and last stable
// offset with ListOffsets, every interval, until ctx ends.
func (e *Env) Watermarks(ctx context.Context, interval time.Duration) {
	proc := e.NextProcess()
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		e.Logf("watermarks: %v", err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		e.ObserveWatermarks(ctx, cl, proc)
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

// ObserveWatermarks records one ListOffsets observation and returns it (nil
// when it failed).
func (e *Env) ObserveWatermarks(ctx context.Context, cl *kgo.Client, proc int) map[string]history.Watermark {
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FOffsets})
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	wms := map[string]history.Watermark{}
	hwm, err := adm.ListEndOffsets(octx, AppendTopic, TxnTopic)
	if err == nil {
		err = hwm.Error()
	}
	var lso kadm.ListedOffsets
	if err == nil {
		lso, err = adm.ListCommittedOffsets(octx, AppendTopic, TxnTopic)
		if err == nil {
			err = lso.Error()
		}
	}
	if err != nil {
		e.Rec.Record(history.Op{Process: proc, Type: history.Fail, F: history.FOffsets, Error: err.Error()})
		return nil
	}
	hwm.Each(func(o kadm.ListedOffset) {
		wms[Key(o.Topic, o.Partition)] = history.Watermark{HWM: o.Offset, LSO: -1}
	})
	lso.Each(func(o kadm.ListedOffset) {
		k := Key(o.Topic, o.Partition)
		w, ok := wms[k]
		if !ok {
			w.HWM = -1
		}
		w.LSO = o.Offset
		wms[k] = w
	})
	e.Rec.Record(history.Op{Process: proc, Type: history.OK, F: history.FOffsets, Watermarks: wms})
	return wms
}

// WaitStable waits until every partition's last stable offset equals its
// high watermark (no transaction left open), or ctx ends.
func (e *Env) WaitStable(ctx context.Context) error {
	proc := e.NextProcess()
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		wms := e.ObserveWatermarks(ctx, cl, proc)
		stable := wms != nil
		for _, w := range wms {
			if w.HWM < 0 || w.LSO != w.HWM {
				stable = false
			}
		}
		if stable {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("last stable offsets still below high watermarks: %v", wms)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// FinalRead reads every partition of both topics from the log start at the
// given isolation level up to the end (high watermark, or last stable offset
// for read_committed) measured just before, and records it as one
// final-poll operation; Incomplete if ctx ended first.
func (e *Env) FinalRead(ctx context.Context, iso string) error {
	proc := e.NextProcess()
	admCl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		return err
	}
	defer admCl.Close()
	var wms map[string]history.Watermark
	for wms == nil {
		if wms = e.ObserveWatermarks(ctx, admCl, proc); wms == nil {
			if ctx.Err() != nil {
				return fmt.Errorf("final read: no watermarks: %w", ctx.Err())
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	targets := map[string]int64{}
	for k, w := range wms {
		targets[k] = w.HWM
		if iso == history.ReadCommitted {
			targets[k] = w.LSO
		}
	}
	level := kgo.ReadUncommitted()
	if iso == history.ReadCommitted {
		level = kgo.ReadCommitted()
	}
	parts := map[int32]kgo.Offset{}
	for p := range e.Partitions {
		parts[int32(p)] = kgo.NewOffset().AtStart()
	}
	proc = e.NextProcess()
	cl, err := kgo.NewClient(append(e.baseOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{AppendTopic: parts, TxnTopic: parts}),
		kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FFinalPoll, Client: "franz-go", Isolation: iso, Targets: targets})
	byKey := map[string]*history.Mop{}
	var order []string
	pos := map[string]int64{}
	var lastWM map[string]history.Watermark
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
		fs := cl.PollFetches(pctx)
		cancel()
		ms, wms, next := collect(fs)
		if wms != nil {
			lastWM = wms
		}
		for _, m := range ms {
			b, ok := byKey[m.Key]
			if !ok {
				b = &history.Mop{F: history.FPoll, Key: m.Key}
				byKey[m.Key] = b
				order = append(order, m.Key)
			}
			b.Records = append(b.Records, m.Records...)
		}
		for k, n := range next {
			if n > pos[k] {
				pos[k] = n
			}
		}
	}
	var value []history.Mop
	for _, k := range order {
		value = append(value, *byKey[k])
	}
	incomplete := !done()
	typ := history.OK
	errS := ""
	if incomplete {
		typ = history.Info
		errS = fmt.Sprintf("read up to %v of %v before the deadline", pos, targets)
	}
	e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FFinalPoll, Client: "franz-go", Isolation: iso, Targets: targets,
		Value: value, Watermarks: lastWM, Incomplete: incomplete, Error: errS})
	return nil
}
