package compact

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// txnRec builds a one-record batch of producer pid (transactional or only
// idempotent); pid < 0 builds a plain batch.
func txnRec(t *testing.T, e *env, pid int64, seq int32, txn bool, k, v string) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.BaseTimestamp = e.clock.Now().UnixMilli()
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
		if txn {
			b.Attributes = batch.AttrTransactional
		}
	}
	b.AddAt(b.BaseTimestamp, []byte(k), []byte(v))
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) marker(l *log.Log, pid int64, typ batch.ControlType) {
	e.t.Helper()
	m := batch.NewMarkerBatch(batch.Marker{ProducerID: pid, Type: typ, Timestamp: e.clock.Now().UnixMilli()})
	if _, err := l.Append(m, log.AppendOptions{AllowControl: true, Now: e.clock.Now()}); err != nil {
		e.t.Fatalf("marker: %v", err)
	}
}

// txnView reads the log: data records as "key=value@offset" and the control
// batches' base offsets with whether they carry a delete horizon.
func txnView(t *testing.T, l *log.Log) (data []string, markers map[int64]bool) {
	t.Helper()
	markers = map[int64]bool{}
	raw, err := l.ReadBytes(l.LogStartOffset(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := batch.Split(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := batch.Validate(b, batch.ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
			t.Fatalf("invalid batch: %v", err)
		}
		h, _ := batch.ParseHeader(b)
		if h.IsControl() {
			markers[h.BaseOffset] = h.HasDeleteHorizon()
			continue
		}
		rs, err := batch.Records(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			data = append(data, string(rs[i].Key)+"="+string(rs[i].Value)+"@"+itoa(h.Offset(&rs[i])))
		}
	}
	return data, markers
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func eqStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Kafka's transaction rules for the cleaner: aborted data goes (and never
// shadows committed values in the map), a marker stays while data of its
// transaction is before it, then gets a delete horizon and goes after it;
// nothing at or above the last stable offset is cleaned.
func TestTransactionsCompacted(t *testing.T) {
	e := newEnv(t)
	e.close()
	e.guards = true
	e.open()
	e.tcfg.DeleteRetentionMs = 1000
	l := e.log("txn")
	const p1, p2, p3 = 1, 2, 3
	e.append(l, txnRec(t, e, -1, 0, false, "b", "1")) // 0
	e.append(l, txnRec(t, e, p2, 0, true, "b", "X"))  // 1 aborted
	e.append(l, txnRec(t, e, p2, 1, true, "e", "X"))  // 2 aborted
	e.marker(l, p2, batch.ControlAbort)               // 3
	e.append(l, txnRec(t, e, p1, 0, true, "a", "1"))  // 4 committed, superseded
	e.marker(l, p1, batch.ControlCommit)              // 5
	e.append(l, txnRec(t, e, -1, 0, false, "a", "2")) // 6
	e.append(l, txnRec(t, e, p2, 2, false, "c", "1")) // 7 p2's last batch
	e.append(l, txnRec(t, e, p1, 1, false, "h", "1")) // 8 p1's last batch
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	e.append(l, txnRec(t, e, p3, 0, true, "d", "1"))  // 9 ongoing
	e.append(l, txnRec(t, e, -1, 0, false, "f", "1")) // 10
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != 9 {
		t.Fatalf("LSO %d", lso)
	}

	// Pass 1: aborted data gone, b=1 kept; both markers stay (their
	// transactions' data was still there), the abort keeps its index entry.
	res, err := e.c.CleanNow("txn", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.EndOffset != 9 {
		t.Fatalf("cleaned up to %d, want the LSO's segment base 9", res.EndOffset)
	}
	data, markers := txnView(t, l)
	want := []string{"b=1@0", "a=2@6", "c=1@7", "h=1@8", "d=1@9", "f=1@10"}
	if !eqStrings(data, want) {
		t.Fatalf("after pass 1: %v, want %v", data, want)
	}
	if len(markers) != 2 || markers[3] || markers[5] {
		t.Fatalf("markers after pass 1: %v", markers)
	}
	if got := l.AllAbortedTxns(); len(got) != 1 || got[0].ProducerID != p2 || got[0].FirstOffset != 1 || got[0].LastOffset != 3 {
		t.Fatalf("aborted index after pass 1: %+v", got)
	}

	// Pass 2: no data of either transaction left: the markers get a delete
	// horizon, the index entry goes.
	if _, err := e.c.CleanNow("txn", 0); err != nil {
		t.Fatal(err)
	}
	if _, markers = txnView(t, l); len(markers) != 2 || !markers[3] || !markers[5] {
		t.Fatalf("markers after pass 2: %v", markers)
	}
	if got := l.AllAbortedTxns(); len(got) != 0 {
		t.Fatalf("aborted index after pass 2: %+v", got)
	}
	// Before the horizon they stay; after it a pass (due by the horizon)
	// removes them.
	if _, err := e.c.CleanNow("txn", 0); err != nil {
		t.Fatal(err)
	}
	if _, markers = txnView(t, l); len(markers) != 2 {
		t.Fatalf("markers removed before their horizon: %v", markers)
	}
	e.clock.Advance(1100 * time.Millisecond)
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("no pass due after the markers' horizon")
	}
	data, markers = txnView(t, l)
	if len(markers) != 0 || !eqStrings(data, want) {
		t.Fatalf("after the horizon: data %v markers %v", data, markers)
	}

	// p3 commits: the LSO moves and the rest becomes cleanable.
	e.marker(l, p3, batch.ControlCommit) // 11
	e.append(l, txnRec(t, e, -1, 0, false, "d", "2"))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if res, err = e.c.CleanNow("txn", 0); err != nil || res.EndOffset != l.LogEndOffset() {
		t.Fatalf("after commit: %+v %v", res, err)
	}
	data, _ = txnView(t, l)
	want = []string{"b=1@0", "a=2@6", "c=1@7", "h=1@8", "f=1@10", "d=2@12"}
	if !eqStrings(data, want) {
		t.Fatalf("after commit: %v, want %v", data, want)
	}
	e.close()
}

// The cleaned segment's .txnindex is part of the crash-safe swap: after a
// power loss the kept entry is still there.
func TestTransactionsCompactedIndexSurvivesCrash(t *testing.T) {
	e := newEnv(t)
	e.close()
	e.guards = true
	e.open()
	l := e.log("txn")
	e.append(l, txnRec(t, e, -1, 0, false, "b", "1"))
	e.append(l, txnRec(t, e, 2, 0, true, "b", "X"))
	e.marker(l, 2, batch.ControlAbort)
	e.append(l, txnRec(t, e, 2, 1, false, "c", "1"))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CleanNow("txn", 0); err != nil {
		t.Fatal(err)
	}
	e.crash()
	l = e.log("txn")
	if got := l.AllAbortedTxns(); len(got) != 1 || got[0].FirstOffset != 1 || got[0].LastOffset != 2 {
		t.Fatalf("aborted index after crash: %+v", got)
	}
	data, markers := txnView(t, l)
	if !eqStrings(data, []string{"b=1@0", "c=1@3"}) || len(markers) != 1 {
		t.Fatalf("after crash: %v %v", data, markers)
	}
}
