package producer

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.Attributes = batch.AttrTransactional
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	b.BaseTimestamp = time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		b.AddAt(b.BaseTimestamp, []byte("k"), []byte("v"))
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func marker(pid int64, epoch int16, typ batch.ControlType) []byte {
	return batch.NewMarkerBatch(batch.Marker{ProducerID: pid, ProducerEpoch: epoch, Type: typ, Timestamp: time.Now().UnixMilli()})
}

// txnEnv is one partition log on a MemFS with a producer guard.
type txnEnv struct {
	t   *testing.T
	fs  *vfs.MemFS
	m   *log.Manager
	l   *log.Log
	st  *State
	dir string
}

func openTxnEnv(t *testing.T, fs *vfs.MemFS) *txnEnv {
	t.Helper()
	return openTxnEnvCfg(t, fs, log.DefaultConfig())
}

func openTxnEnvCfg(t *testing.T, fs *vfs.MemFS, cfg log.Config) *txnEnv {
	t.Helper()
	e := &txnEnv{t: t, fs: fs, dir: "/data", st: NewState()}
	m, err := log.OpenManager(fs, e.dir, log.ManagerOptions{
		HousekeepingInterval: -1,
		ProducerGuard:        func(string, int32) log.ProducerGuard { return NewGuard(e.st) },
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Open("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Rebuild(fs, l, time.Now().UnixMilli(), 86400000); err != nil {
		t.Fatal(err)
	}
	e.m, e.l = m, l
	return e
}

func (e *txnEnv) append(b []byte, opts log.AppendOptions) log.AppendResult {
	e.t.Helper()
	r, err := e.l.Append(b, opts)
	if err != nil {
		e.t.Fatalf("append: %v", err)
	}
	return r
}

func (e *txnEnv) mark(pid int64, epoch int16, typ batch.ControlType) log.AppendResult {
	e.t.Helper()
	return e.append(marker(pid, epoch, typ), log.AppendOptions{AllowControl: true})
}

func TestTxnLastStableOffsetAndAbortIndex(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	e.append(idempotentBatch(t, 1, 0, 0, 2), log.AppendOptions{}) // 0-1, not transactional
	if lso := e.l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO without transactions = %d", lso)
	}
	e.append(txnBatch(t, 10, 0, 0, 3), log.AppendOptions{}) // 2-4, opens txn of 10
	e.append(txnBatch(t, 11, 0, 0, 1), log.AppendOptions{}) // 5, opens txn of 11
	e.append(txnBatch(t, 10, 0, 3, 1), log.AppendOptions{}) // 6
	if lso := e.l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO = %d, want 2", lso)
	}
	if got := e.st.OngoingTxns(); len(got) != 2 || got[10] != 2 || got[11] != 5 {
		t.Fatalf("ongoing %v", got)
	}
	// 10 aborts: the LSO moves to 11's first offset; the index gets the entry.
	r := e.mark(10, 0, batch.ControlAbort) // 7
	if r.BaseOffset != 7 {
		t.Fatalf("marker at %d", r.BaseOffset)
	}
	if lso := e.l.LastStableOffset(); lso != 5 {
		t.Fatalf("LSO after abort = %d, want 5", lso)
	}
	want := log.AbortedTxn{ProducerID: 10, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0] != want {
		t.Fatalf("aborted %+v", got)
	}
	// 11 commits: nothing ongoing, LSO = HW; a commit adds no entry.
	e.mark(11, 0, batch.ControlCommit) // 8
	if lso, hw := e.l.LastStableOffset(), e.l.HighWatermark(); lso != hw || hw != 9 {
		t.Fatalf("LSO %d HW %d", lso, hw)
	}
	if got := e.l.AllAbortedTxns(); len(got) != 1 {
		t.Fatalf("aborted %+v", got)
	}
	// Fetch-side selection (Kafka's rule).
	if got := e.l.AbortedTxns(0, 9); len(got) != 1 {
		t.Fatalf("AbortedTxns(0,9) = %+v", got)
	}
	if got := e.l.AbortedTxns(8, 9); len(got) != 0 { // marker before the fetch offset
		t.Fatalf("AbortedTxns(8,9) = %+v", got)
	}
	if got := e.l.AbortedTxns(0, 2); len(got) != 0 { // data returned ends before the txn
		t.Fatalf("AbortedTxns(0,2) = %+v", got)
	}
	// A marker for a producer without a transaction is appended, no entry.
	e.mark(99, 0, batch.ControlAbort)
	if got := e.l.AllAbortedTxns(); len(got) != 1 {
		t.Fatalf("aborted %+v", got)
	}
	// Infos carry the transaction start.
	e.append(txnBatch(t, 10, 0, 4, 1), log.AppendOptions{}) // offset 10: new txn of 10
	for _, pi := range e.st.Producers() {
		if pi.ProducerID == 10 && pi.CurrentTxnStartOffset != 10 {
			t.Fatalf("producer 10: %+v", pi)
		}
		if pi.ProducerID == 11 && pi.CurrentTxnStartOffset != -1 {
			t.Fatalf("producer 11: %+v", pi)
		}
	}
}

func TestTxnFencing(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	e.append(txnBatch(t, 10, 1, 0, 2), log.AppendOptions{})
	// A non-transactional batch while the transaction is ongoing.
	if _, err := e.l.Append(idempotentBatch(t, 10, 1, 2, 1), log.AppendOptions{}); log.KafkaCode(err) != CodeInvalidTxnState {
		t.Fatalf("non-transactional in txn: %v", err)
	}
	// A marker of an older epoch is refused and nothing is appended.
	leo := e.l.LogEndOffset()
	if _, err := e.l.Append(marker(10, 0, batch.ControlAbort), log.AppendOptions{AllowControl: true}); log.KafkaCode(err) != CodeInvalidProducerEpoch {
		t.Fatalf("old-epoch marker: %v", err)
	}
	if e.l.LogEndOffset() != leo || e.l.LastStableOffset() != 0 {
		t.Fatalf("old-epoch marker changed the log: leo %d lso %d", e.l.LogEndOffset(), e.l.LastStableOffset())
	}
	// The coordinator aborts with a bumped epoch (fencing, KIP-890 style):
	// the transaction ends, later batches of the old epoch are fenced.
	e.mark(10, 2, batch.ControlAbort)
	if e.l.LastStableOffset() != e.l.HighWatermark() {
		t.Fatal("transaction still ongoing after the abort")
	}
	if _, err := e.l.Append(txnBatch(t, 10, 1, 2, 1), log.AppendOptions{}); log.KafkaCode(err) != CodeInvalidProducerEpoch {
		t.Fatalf("old epoch after bump: %v", err)
	}
	// The new epoch must start at sequence 0.
	if _, err := e.l.Append(txnBatch(t, 10, 2, 5, 1), log.AppendOptions{}); log.KafkaCode(err) != CodeOutOfOrderSequence {
		t.Fatalf("new epoch at seq 5: %v", err)
	}
	e.append(txnBatch(t, 10, 2, 0, 1), log.AppendOptions{})
	// A transactional batch of a newer epoch (epoch bumped by InitProducerId)
	// resets the sequence and keeps the ongoing transaction's start.
	first := e.st.OngoingTxns()[10]
	e.append(txnBatch(t, 10, 3, 0, 1), log.AppendOptions{})
	if got := e.st.OngoingTxns()[10]; got != first {
		t.Fatalf("txn start moved from %d to %d", first, got)
	}
	// Coordinator epoch fencing on markers.
	e.append(marker2(10, 3, batch.ControlCommit, 5), log.AppendOptions{AllowControl: true})
	if _, err := e.l.Append(marker2(10, 3, batch.ControlCommit, 4), log.AppendOptions{AllowControl: true}); log.KafkaCode(err) != CodeCoordinatorFenced {
		t.Fatalf("zombie coordinator: %v", err)
	}
	// Clients cannot write markers.
	if _, err := e.l.Append(marker(10, 3, batch.ControlAbort), log.AppendOptions{}); log.KafkaCode(err) != CodeInvalidRecord {
		t.Fatalf("client marker: %v", err)
	}
}

func marker2(pid int64, epoch int16, typ batch.ControlType, coord int32) []byte {
	return batch.NewMarkerBatch(batch.Marker{ProducerID: pid, ProducerEpoch: epoch, Type: typ, CoordinatorEpoch: coord, Timestamp: time.Now().UnixMilli()})
}

// coordBatch is a transactional batch as a coordinator writes it: no
// sequence.
func coordBatch(t *testing.T, pid int64, epoch int16) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.Attributes = batch.AttrTransactional
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, -1
	b.AddAt(time.Now().UnixMilli(), []byte("group"), []byte("offset"))
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTxnCoordinatorAppend(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	// Without Coordinator, sequence -1 is refused.
	if _, err := e.l.Append(coordBatch(t, 20, 0), log.AppendOptions{}); log.KafkaCode(err) != CodeInvalidRecord {
		t.Fatalf("client batch with seq -1: %v", err)
	}
	r := e.append(coordBatch(t, 20, 0), log.AppendOptions{Coordinator: true})
	e.append(coordBatch(t, 20, 0), log.AppendOptions{Coordinator: true}) // no sequence check
	if lso := e.l.LastStableOffset(); lso != r.BaseOffset {
		t.Fatalf("LSO %d, want %d", lso, r.BaseOffset)
	}
	e.mark(20, 0, batch.ControlCommit)
	if e.l.LastStableOffset() != e.l.HighWatermark() {
		t.Fatal("commit did not end the coordinator's transaction")
	}
	e.mark(20, 1, batch.ControlAbort)
	if _, err := e.l.Append(coordBatch(t, 20, 0), log.AppendOptions{Coordinator: true}); log.KafkaCode(err) != CodeInvalidProducerEpoch {
		t.Fatalf("old epoch coordinator batch: %v", err)
	}
}

// TestTxnStateSurvivesRestart checks the snapshot's current_txn_first_offset,
// the replay of markers after it, and the .txnindex on disk.
func TestTxnStateSurvivesRestart(t *testing.T) {
	for _, withSnapshot := range []bool{false, true} {
		fs := vfs.NewMemFS()
		e := openTxnEnv(t, fs)
		e.append(txnBatch(t, 10, 0, 0, 2), log.AppendOptions{}) // 0-1
		e.append(txnBatch(t, 11, 0, 0, 2), log.AppendOptions{}) // 2-3
		if withSnapshot {
			if err := e.st.WriteSnapshot(fs, e.l.Dir(), e.l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
		}
		e.mark(11, 0, batch.ControlAbort)                       // 4
		e.append(txnBatch(t, 12, 0, 0, 1), log.AppendOptions{}) // 5
		if err := e.m.Close(); err != nil {
			t.Fatal(err)
		}
		e = openTxnEnv(t, fs)
		if lso := e.l.LastStableOffset(); lso != 0 {
			t.Fatalf("snapshot=%v: LSO after restart %d", withSnapshot, lso)
		}
		if got := e.st.OngoingTxns(); len(got) != 2 || got[10] != 0 || got[12] != 5 {
			t.Fatalf("snapshot=%v: ongoing %v", withSnapshot, got)
		}
		want := log.AbortedTxn{ProducerID: 11, FirstOffset: 2, LastOffset: 4, LastStableOffset: 0}
		if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0] != want {
			t.Fatalf("snapshot=%v: aborted %+v", withSnapshot, got)
		}
		e.mark(10, 0, batch.ControlCommit)
		if lso := e.l.LastStableOffset(); lso != 5 {
			t.Fatalf("snapshot=%v: LSO %d", withSnapshot, lso)
		}
		e.m.Close()
	}
}

// Readers racing appends: every transactional batch a read_committed read
// returns belongs to a transaction whose marker was already in the log
// (below the high watermark the read reported).
func TestTxnReadCommittedRacingAppends(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	done := make(chan struct{})
	go func() {
		defer close(done)
		seqs := map[int64]int32{}
		for i := 0; i < 300; i++ {
			pid := int64(1 + i%3)
			if i%4 == 3 {
				typ := batch.ControlCommit
				if i%8 == 3 {
					typ = batch.ControlAbort
				}
				if _, err := e.l.Append(marker(pid, 0, typ), log.AppendOptions{AllowControl: true}); err != nil {
					t.Error(err)
					return
				}
				continue
			}
			if _, err := e.l.Append(txnBatch(t, pid, 0, seqs[pid], 1), log.AppendOptions{}); err != nil {
				t.Error(err)
				return
			}
			seqs[pid]++
		}
	}()
	type seen struct{ pid, off, hw int64 }
	var checks []seen
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		res, err := e.l.ReadCommitted(0, 1<<30, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.LastStableOffset > res.HighWatermark {
			t.Fatalf("LSO %d above HW %d", res.LastStableOffset, res.HighWatermark)
		}
		data, err := res.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			h, _ := batch.ParseHeader(data)
			if h.IsTransactional() && !h.IsControl() {
				checks = append(checks, seen{h.ProducerID, h.BaseOffset, res.HighWatermark})
			}
			if h.LastOffset() >= res.LastStableOffset {
				t.Fatalf("batch [%d, %d] returned at LSO %d", h.BaseOffset, h.LastOffset(), res.LastStableOffset)
			}
			data = data[h.TotalSize():]
		}
	}
	all, err := e.l.ReadBytes(0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	markersOf := map[int64][]int64{}
	for len(all) > 0 {
		h, _ := batch.ParseHeader(all)
		if h.IsControl() {
			markersOf[h.ProducerID] = append(markersOf[h.ProducerID], h.BaseOffset)
		}
		all = all[h.TotalSize():]
	}
	for _, c := range checks {
		ok := false
		for _, m := range markersOf[c.pid] {
			if m > c.off && m < c.hw {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("read_committed returned offset %d of producer %d before its marker (HW %d)", c.off, c.pid, c.hw)
		}
	}
	if len(checks) == 0 {
		t.Fatal("no transactional data read")
	}
}
