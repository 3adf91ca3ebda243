package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// txnDataBatch is a transactional batch of producer pid whose record values
// are vals.
func txnDataBatch(t *testing.T, pid int64, epoch int16, seq int32, vals ...string) []byte {
	t.Helper()
	b := batch.NewBuilder()
	if pid >= 0 {
		b.Attributes = batch.AttrTransactional
	}
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	now := time.Now().UnixMilli()
	b.BaseTimestamp = now
	for _, v := range vals {
		b.AddAt(now, []byte("k"), []byte(v))
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func txnAppend(t *testing.T, l *log.Log, b []byte, control bool) {
	t.Helper()
	if _, err := l.Append(b, log.AppendOptions{AllowControl: control, LeaderEpoch: 0}); err != nil {
		t.Fatalf("append: %v", err)
	}
}

func txnMarker(pid int64, typ batch.ControlType) []byte {
	return batch.NewMarkerBatch(batch.Marker{ProducerID: pid, Type: typ, Timestamp: time.Now().UnixMilli()})
}

// consumeValues reads partition 0 of topic from offset 0 with kgo at the
// given isolation level until want values arrived (or the deadline).
func consumeValues(t *testing.T, tb *testBroker, topic string, committed bool, want []string) {
	t.Helper()
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}})}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := tb.client(opts...)
	var got []string
	ctx := dpCtx(t, 10*time.Second)
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("committed=%v: got %q, want %q", committed, got, want)
	}
}

func TestTxnPartitionReadCommitted(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "txp", 1, nil)
	l := tb.broker().Logs().Get("txp", 0)

	txnAppend(t, l, txnDataBatch(t, -1, -1, -1, "a0", "a1"), false) // 0-1
	txnAppend(t, l, txnDataBatch(t, 100, 0, 0, "c0", "c1"), false)  // 2-3 commits
	txnAppend(t, l, txnDataBatch(t, 200, 0, 0, "x0", "x1"), false)  // 4-5 aborts
	txnAppend(t, l, txnDataBatch(t, 100, 0, 2, "c2"), false)        // 6
	txnAppend(t, l, txnMarker(200, batch.ControlAbort), true)       // 7
	txnAppend(t, l, txnMarker(100, batch.ControlCommit), true)      // 8
	txnAppend(t, l, txnDataBatch(t, -1, -1, -1, "a2"), false)       // 9
	txnAppend(t, l, txnDataBatch(t, 300, 0, 0, "o0"), false)        // 10 ongoing
	txnAppend(t, l, txnDataBatch(t, -1, -1, -1, "a3"), false)       // 11
	if lso := l.LastStableOffset(); lso != 10 {
		t.Fatalf("LSO %d", lso)
	}

	// Wire level: LSO at both levels, aborted list only for read_committed.
	rc := tb.raw()
	for i, committed := range []bool{false, true} {
		req := dpFetchReq("txp", map[int32]int64{0: 0}, 0, 0)
		if committed {
			req.IsolationLevel = 1
		}
		resp := dpFetchRaw(t, rc, req, int32(i+1))
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 12 || p.LastStableOffset != 10 {
			t.Fatalf("committed=%v: %+v", committed, p)
		}
		hs := txnBatchesIn(t, p.RecordBatches)
		last := hs[len(hs)-1].LastOffset()
		if committed {
			want := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 200, FirstOffset: 4}}
			if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != want[0].ProducerID ||
				p.AbortedTransactions[0].FirstOffset != want[0].FirstOffset {
				t.Fatalf("aborted %+v", p.AbortedTransactions)
			}
			if last != 9 {
				t.Fatalf("read_committed returned data up to %d", last)
			}
		} else {
			if p.AbortedTransactions != nil {
				t.Fatalf("read_uncommitted got aborted list %+v", p.AbortedTransactions)
			}
			if last != 11 {
				t.Fatalf("read_uncommitted returned data up to %d", last)
			}
		}
	}
	// A read_committed fetch past the aborted marker reports nothing.
	req := dpFetchReq("txp", map[int32]int64{0: 8}, 0, 0)
	req.IsolationLevel = 1
	if p := dpFetchRaw(t, rc, req, 3).Topics[0].Partitions[0]; p.AbortedTransactions == nil || len(p.AbortedTransactions) != 0 {
		t.Fatalf("fetch from 8: aborted %+v", p.AbortedTransactions)
	}

	// ListOffsets latest: HW for read_uncommitted, LSO for read_committed.
	for iso, want := range map[int8]int64{0: 12, 1: 10} {
		lreq := kmsg.NewPtrListOffsetsRequest()
		lreq.ReplicaID, lreq.IsolationLevel = -1, iso
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "txp"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		lreq.Topics = append(lreq.Topics, rt)
		lresp := tb.request(lreq).(*kmsg.ListOffsetsResponse)
		if got := lresp.Topics[0].Partitions[0].Offset; got != want {
			t.Fatalf("isolation %d: latest %d, want %d", iso, got, want)
		}
	}

	// DescribeProducers shows the ongoing transaction's start.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "txp", []int32{0}
	dreq.Topics = append(dreq.Topics, dt)
	dresp := tb.request(dreq).(*kmsg.DescribeProducersResponse)
	starts := map[int64]int64{}
	for _, ap := range dresp.Topics[0].Partitions[0].ActiveProducers {
		starts[ap.ProducerID] = ap.CurrentTxnStartOffset
	}
	if starts[300] != 10 || starts[100] != -1 || starts[200] != -1 {
		t.Fatalf("txn starts %v", starts)
	}

	// Real clients: kgo drops the aborted records from the aborted list.
	consumeValues(t, tb, "txp", false, []string{"a0", "a1", "c0", "c1", "x0", "x1", "c2", "a2", "o0", "a3"})
	// read_committed stops at the LSO; once 300 commits, the rest follows
	// (in order, so the aborted records were skipped, not delayed).
	txnAppend(t, l, txnMarker(300, batch.ControlCommit), true) // 12
	consumeValues(t, tb, "txp", true, []string{"a0", "a1", "c0", "c1", "c2", "a2", "o0", "a3"})

	// After a restart the aborted index and the LSO are the same.
	tb.restart()
	l = tb.broker().Logs().Get("txp", 0)
	if got := l.AllAbortedTxns(); len(got) != 1 || got[0].ProducerID != 200 || got[0].FirstOffset != 4 || got[0].LastOffset != 7 {
		t.Fatalf("aborted after restart %+v", got)
	}
	if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != hw {
		t.Fatalf("LSO %d HW %d after restart", lso, hw)
	}
	consumeValues(t, tb, "txp", true, []string{"a0", "a1", "c0", "c1", "c2", "a2", "o0", "a3"})
}

// An aborted transaction whose data spans a fetch boundary: the second
// fetch (starting inside the transaction) still reports it.
func TestTxnPartitionAbortedAcrossFetches(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "txq", 1, nil)
	l := tb.broker().Logs().Get("txq", 0)
	txnAppend(t, l, txnDataBatch(t, 7, 0, 0, "x0"), false)    // 0
	txnAppend(t, l, txnDataBatch(t, -1, -1, -1, "a0"), false) // 1 (not in the txn)
	txnAppend(t, l, txnDataBatch(t, 7, 0, 1, "x1"), false)    // 2
	txnAppend(t, l, txnMarker(7, batch.ControlAbort), true)   // 3
	txnAppend(t, l, txnDataBatch(t, -1, -1, -1, "a1"), false) // 4
	rc := tb.raw()
	for i, from := range []int64{0, 1, 2, 3, 4} {
		req := dpFetchReq("txq", map[int32]int64{0: from}, 0, 0)
		req.IsolationLevel = 1
		p := dpFetchRaw(t, rc, req, int32(i+1)).Topics[0].Partitions[0]
		wantAborted := from <= 3
		if got := len(p.AbortedTransactions) == 1 && p.AbortedTransactions[0].FirstOffset == 0; got != wantAborted {
			t.Fatalf("fetch from %d: aborted %+v", from, p.AbortedTransactions)
		}
	}
	consumeValues(t, tb, "txq", true, []string{"a0", "a1"})
}

// txnBatchesIn splits fetched bytes into batch headers, validating each as
// stored (control batches included).
func txnBatchesIn(t *testing.T, b []byte) []batch.Header {
	t.Helper()
	var out []batch.Header
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil || h.TotalSize() > len(b) {
			t.Fatalf("fetched bytes are not whole batches: %v", err)
		}
		if err := batch.Validate(b[:h.TotalSize()], batch.ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
			t.Fatalf("fetched batch invalid: %v", err)
		}
		out = append(out, h)
		b = b[h.TotalSize():]
	}
	return out
}

// ListOffsets by timestamp at read_committed: an answer at or past the
// last stable offset is "none", as Kafka.
func TestTxnPartitionListOffsetsByTimestamp(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "txl", 1, nil)
	l := tb.broker().Logs().Get("txl", 0)
	at := func(pid int64, ts int64) []byte {
		b := batch.NewBuilder()
		if pid >= 0 {
			b.Attributes = batch.AttrTransactional
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, 0
		}
		b.BaseTimestamp = ts
		b.AddAt(ts, []byte("k"), []byte("v"))
		out, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	now := time.Now().UnixMilli()
	txnAppend(t, l, at(-1, now-2000), false) // 0
	txnAppend(t, l, at(5, now-1000), false)  // 1, ongoing
	for _, c := range []struct {
		ts        int64
		committed bool
		want      int64
		ok        bool
	}{
		{now - 1500, false, 1, true},
		{now - 1500, true, -1, false},
		{now - 3000, true, 0, true},
		{listMaxTimestamp, false, 1, true},
		{listMaxTimestamp, true, -1, false},
		{listLatest, true, 1, true},
		{listLatest, false, 2, true},
	} {
		off, _, ok := lookupOffset(tb.broker().replicas.Get("txl", 0), c.ts, 9, c.committed)
		if ok != c.ok || (ok && off != c.want) {
			t.Fatalf("ts %d committed=%v: %d %v, want %d %v", c.ts, c.committed, off, ok, c.want, c.ok)
		}
	}
}
