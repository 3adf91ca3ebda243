package producer

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// A rebuild replays every transaction marker up to the log end, not only
// those below the high watermark: a replica restarted (or truncated) with
// its high watermark not known yet once skipped the markers above it, so a
// committed transaction stayed open in its producer state and the next
// ABORT marker of that producer wrote an aborted-transaction entry
// spanning committed transactions (finding 13 of docs/reliability.md).
func TestRebuildReplaysMarkersAboveHighWatermark(t *testing.T) {
	fs := vfs.NewMemFS()
	e := openTxnEnv(t, fs)
	e.l.SetHighWatermark(0)                                 // replicated: the HW no longer follows the end
	e.append(txnBatch(t, 10, 0, 0, 2), log.AppendOptions{}) // 0-1
	e.mark(10, 0, batch.ControlCommit)                      // 2
	e.append(txnBatch(t, 10, 0, 2, 1), log.AppendOptions{}) // 3
	e.mark(10, 0, batch.ControlCommit)                      // 4
	e.append(txnBatch(t, 10, 0, 3, 1), log.AppendOptions{}) // 5, ongoing

	check := func(what string, st *State) {
		t.Helper()
		if got := st.OngoingTxns(); len(got) != 1 || got[10] != 5 {
			t.Fatalf("%s: ongoing transactions %v, want producer 10 from offset 5", what, got)
		}
	}
	// A rebuild from the log alone (no snapshot) with the HW at 0.
	st := NewState()
	if err := st.Rebuild(fs, e.l, time.Now().UnixMilli(), 86400000); err != nil {
		t.Fatal(err)
	}
	check("rebuild below the high watermark", st)

	// A truncation (the log's own rebuild) with the HW still at 0.
	e.append(txnBatch(t, 11, 0, 0, 1), log.AppendOptions{}) // 6
	if err := e.l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	check("rebuild after truncation", e.st)

	// The abort of the ongoing transaction indexes it alone.
	e.mark(10, 0, batch.ControlAbort) // 6
	want := log.AbortedTxn{ProducerID: 10, FirstOffset: 5, LastOffset: 6, LastStableOffset: 7}
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0] != want {
		t.Fatalf("aborted transactions %+v, want %+v", got, want)
	}
}
