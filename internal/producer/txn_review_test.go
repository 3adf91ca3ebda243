package producer

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Moving the log start offset (retention, DeleteRecords) never ends an
// ongoing transaction (Kafka keeps every producer then): the last stable
// offset stays at the log start until the marker comes. A coordinator's
// batches have no place in the sequence window, so a transaction made of
// them used to be dropped, exposing its remaining data to read_committed
// readers and losing the abort's index entry.
func TestTxnSurvivesLogStartMove(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	e.append(coordBatch(t, 20, 0), log.AppendOptions{Coordinator: true}) // 0
	e.append(idempotentBatch(t, 1, 0, 0, 2), log.AppendOptions{})        // 1-2
	e.append(coordBatch(t, 20, 0), log.AppendOptions{Coordinator: true}) // 3
	e.append(txnBatch(t, 21, 0, 0, 1), log.AppendOptions{})              // 4
	e.append(idempotentBatch(t, 1, 0, 2, 1), log.AppendOptions{})        // 5
	if err := e.l.TruncatePrefix(5); err != nil {
		t.Fatal(err)
	}
	if lso := e.l.LastStableOffset(); lso != 5 {
		t.Fatalf("LSO %d after the log start moved past open transactions, want the log start 5", lso)
	}
	if got := e.st.OngoingTxns(); len(got) != 2 || got[20] != 0 || got[21] != 4 {
		t.Fatalf("ongoing %v", got)
	}
	// A restart from a snapshot keeps them open too.
	if err := e.st.WriteSnapshot(e.fs, e.l.Dir(), e.l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTxnEnv(t, e.fs)
	if lso := e.l.LastStableOffset(); lso != 5 {
		t.Fatalf("LSO %d after restart, want 5", lso)
	}
	e.mark(20, 0, batch.ControlAbort) // 6
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0].ProducerID != 20 || got[0].LastOffset != 6 {
		t.Fatalf("aborted %+v", got)
	}
	e.mark(21, 0, batch.ControlCommit) // 7
	if lso := e.l.LastStableOffset(); lso != 8 {
		t.Fatalf("LSO %d after both markers", lso)
	}
	e.m.Close()
}

// A suffix truncation that cuts off a marker reopens its transaction (the
// data before it is undecided again), and producer snapshots past the new
// end are deleted, so a restart after the log grew back does not load state
// describing batches that are gone (Kafka reloads its producer state on
// truncation).
func TestTxnTruncationReopensTransaction(t *testing.T) {
	fs := vfs.NewMemFS()
	e := openTxnEnv(t, fs)
	e.append(txnBatch(t, 10, 0, 0, 2), log.AppendOptions{}) // 0-1
	e.mark(10, 0, batch.ControlCommit)                      // 2
	e.append(txnBatch(t, 11, 0, 0, 1), log.AppendOptions{}) // 3
	if err := e.st.WriteSnapshot(fs, e.l.Dir(), e.l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := e.l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if got := e.st.OngoingTxns(); len(got) != 1 || got[10] != 0 {
		t.Fatalf("ongoing after truncation %v, want producer 10's transaction open again at 0", got)
	}
	if lso := e.l.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d after the commit marker was cut off", lso)
	}
	if _, err := fs.Stat(e.l.Dir() + "/" + SnapshotName(4)); err == nil {
		t.Fatal("snapshot past the truncation point still on disk")
	}
	// The window survived: the producer's next batch follows on.
	if _, err := e.l.Append(txnBatch(t, 10, 0, 5, 1), log.AppendOptions{}); log.KafkaCode(err) != CodeOutOfOrderSequence {
		t.Fatalf("sequence gap after truncation: %v", err)
	}
	e.mark(10, 0, batch.ControlAbort) // 2: the transaction is now aborted
	want := log.AbortedTxn{ProducerID: 10, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0] != want {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	e.append(idempotentBatch(t, 1, 0, 0, 2), log.AppendOptions{}) // 3-4
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTxnEnv(t, fs)
	if lso, hw := e.l.LastStableOffset(), e.l.HighWatermark(); lso != hw || len(e.st.OngoingTxns()) != 0 {
		t.Fatalf("after restart: LSO %d (HW %d), ongoing %v", lso, hw, e.st.OngoingTxns())
	}
	e.m.Close()
}
