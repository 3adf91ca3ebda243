package producer

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// txnModel recomputes, from the batches that survived in the log, what
// the transaction state must be: the aborted transactions (producer, first
// offset, marker offset) and the last stable offset.
func txnModel(t *testing.T, l *log.Log) (aborted [][3]int64, lso int64) {
	t.Helper()
	data, err := l.ReadBytes(l.LogStartOffset(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	ongoing := map[int64]int64{}
	for len(data) > 0 {
		h, err := batch.ParseHeader(data)
		if err != nil {
			t.Fatal(err)
		}
		b := data[:h.TotalSize()]
		data = data[h.TotalSize():]
		switch {
		case h.IsControl():
			m, err := batch.ParseMarker(b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if first, ok := ongoing[m.ProducerID]; ok && m.Type == batch.ControlAbort {
				aborted = append(aborted, [3]int64{m.ProducerID, first, h.BaseOffset})
			}
			delete(ongoing, m.ProducerID)
		case h.IsTransactional():
			if _, ok := ongoing[h.ProducerID]; !ok {
				ongoing[h.ProducerID] = h.BaseOffset
			}
		}
	}
	lso = l.HighWatermark()
	for _, f := range ongoing {
		lso = min(lso, f)
	}
	return aborted, lso
}

func checkTxnModel(t *testing.T, e *txnEnv, what string) {
	t.Helper()
	want, wantLSO := txnModel(t, e.l)
	var got [][3]int64
	for _, a := range e.l.AllAbortedTxns() {
		got = append(got, [3]int64{a.ProducerID, a.FirstOffset, a.LastOffset})
	}
	if len(got) != len(want) {
		t.Fatalf("%s: aborted index %v, log says %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: aborted index %v, log says %v", what, got, want)
		}
	}
	if lso := e.l.LastStableOffset(); lso != wantLSO {
		t.Fatalf("%s: LSO %d, log says %d", what, lso, wantLSO)
	}
}

// writeTxnWorkload appends interleaved transactions of three producers,
// some committed, some aborted, one left open; with flushEvery > 0 the log
// is flushed after every flushEvery appends.
func writeTxnWorkload(t *testing.T, e *txnEnv, r *rand.Rand, steps int, snapshotAt int) {
	seqs := map[int64]int32{}
	open := map[int64]bool{}
	for i := 0; i < steps; i++ {
		pid := int64(1 + r.IntN(3))
		switch {
		case open[pid] && r.IntN(3) == 0:
			typ := batch.ControlCommit
			if r.IntN(2) == 0 {
				typ = batch.ControlAbort
			}
			e.mark(pid, 0, typ)
			open[pid] = false
		case r.IntN(5) == 0:
			e.append(idempotentBatch(t, 50, 0, seqs[50], 1), log.AppendOptions{}) // outside transactions
			seqs[50]++
		default:
			n := 1 + r.IntN(3)
			e.append(txnBatch(t, pid, 0, seqs[pid], n), log.AppendOptions{})
			seqs[pid] += int32(n)
			open[pid] = true
		}
		if r.IntN(4) == 0 {
			if err := e.l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if i == snapshotAt {
			if err := e.st.WriteSnapshot(e.fs, e.l.Dir(), e.l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
		}
		if r.IntN(10) == 0 {
			if err := e.l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTxnCrashRecovery: after a power loss tearing unsynced tails (of the
// log and of the .txnindex files), the reopened partition's aborted index
// and LSO agree with the batches that survived.
func TestTxnCrashRecovery(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		fs := vfs.NewMemFS()
		e := openTxnEnv(t, fs)
		r := rand.New(rand.NewPCG(seed, 7))
		writeTxnWorkload(t, e, r, 60, int(seed%3)*20-1)
		checkTxnModel(t, e, "before crash")
		fs.Crash(vfs.CrashOptions{Rand: r, TornTail: true, Garble: seed%2 == 1})
		e = openTxnEnv(t, fs)
		checkTxnModel(t, e, "after crash")
		// And it keeps working: the state accepts the next transaction.
		e.append(txnBatch(t, 9, 0, 0, 1), log.AppendOptions{})
		e.mark(9, 0, batch.ControlAbort)
		checkTxnModel(t, e, "after more appends")
		e.m.Close()
	}
}

// A marker written without its index entry (the entry's write failed, then
// the process died): the log stops taking appends, and the rebuild after
// the restart puts the entry back.
func TestTxnIndexEntryRestoredAfterFailure(t *testing.T) {
	fs := vfs.NewMemFS()
	e := openTxnEnv(t, fs)
	e.append(txnBatch(t, 3, 0, 0, 2), log.AppendOptions{})
	fs.SetFault(func(op, name string) error {
		if strings.HasSuffix(name, ".txnindex") {
			return errors.New("injected")
		}
		return nil
	})
	_, err := e.l.Append(marker(3, 0, batch.ControlAbort), log.AppendOptions{AllowControl: true})
	if log.KafkaCode(err) != log.CodeKafkaStorageError {
		t.Fatalf("append with failing txnindex: %v", err)
	}
	fs.SetFault(nil)
	if _, err := e.l.Append(txnBatch(t, 4, 0, 0, 1), log.AppendOptions{}); err == nil {
		t.Fatal("failed log took an append")
	}
	fs.ProcessCrash()
	e = openTxnEnv(t, fs)
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 {
		t.Fatalf("aborted after restart %+v", got)
	}
	checkTxnModel(t, e, "after restart")
	e.m.Close()
}

// Retention and DeleteRecords: a segment's .txnindex goes with it.
func TestTxnIndexRetiredWithSegment(t *testing.T) {
	fs := vfs.NewMemFS()
	e := openTxnEnv(t, fs)
	e.append(txnBatch(t, 3, 0, 0, 2), log.AppendOptions{})
	e.mark(3, 0, batch.ControlAbort) // 2
	if err := e.l.Roll(); err != nil {
		t.Fatal(err)
	}
	e.append(txnBatch(t, 3, 0, 2, 1), log.AppendOptions{}) // 3
	e.mark(3, 0, batch.ControlAbort)                       // 4
	if n := len(e.l.AllAbortedTxns()); n != 2 {
		t.Fatalf("%d entries", n)
	}
	if _, err := fs.Stat(e.l.Dir() + "/00000000000000000000.txnindex"); err != nil {
		t.Fatalf("no txnindex for the first segment: %v", err)
	}
	if err := e.l.TruncatePrefix(3); err != nil {
		t.Fatal(err)
	}
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0].LastOffset != 4 {
		t.Fatalf("after prefix truncation %+v", got)
	}
	if _, err := fs.Stat(e.l.Dir() + "/00000000000000000000.txnindex"); err == nil {
		t.Fatal("retired segment's txnindex still under its name")
	}
	// Suffix truncation drops the entry of a truncated marker.
	if err := e.l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if got := e.l.AllAbortedTxns(); len(got) != 0 {
		t.Fatalf("after suffix truncation %+v", got)
	}
	e.m.Close()
}
