package producer

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// A transaction ended by a marker the in-sync replicas may not hold yet
// (the marker is at or above the high watermark) stays undecided for
// readers: the last stable offset stays at its first offset until the high
// watermark passes the marker (Kafka's unreplicated transactions; finding
// 9 of docs/reliability.md).
func TestTxnLastStableOffsetWaitsForMarkerBelowHighWatermark(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	e.l.SetHighWatermark(0)                                       // a replicated partition: the HW no longer follows the end
	e.append(idempotentBatch(t, 1, 0, 0, 2), log.AppendOptions{}) // 0-1
	e.append(txnBatch(t, 10, 0, 0, 3), log.AppendOptions{})       // 2-4, 10's transaction
	e.append(txnBatch(t, 11, 0, 0, 1), log.AppendOptions{})       // 5, 11's transaction
	e.l.SetHighWatermark(6)
	if lso := e.l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO with two ongoing transactions = %d, want 2", lso)
	}
	e.mark(10, 0, batch.ControlCommit) // 6
	e.mark(11, 0, batch.ControlAbort)  // 7
	if got := e.st.OngoingTxns(); len(got) != 0 {
		t.Fatalf("ongoing after both markers: %v", got)
	}
	if lso := e.l.LastStableOffset(); lso != 2 {
		t.Fatalf("high watermark 6, both markers above it: LSO %d, want 2", lso)
	}
	// The high watermark moving forgets the transactions decided below
	// it, whether or not anyone asks for the last stable offset.
	e.l.SetHighWatermark(7)
	if n := e.st.nDecided.Load(); n != 1 {
		t.Fatalf("%d decided transactions remembered with one marker below the high watermark 7, want 1", n)
	}
	for _, c := range []struct{ hw, lso int64 }{{7, 5}, {8, 8}} {
		e.l.SetHighWatermark(c.hw)
		if lso := e.l.LastStableOffset(); lso != c.lso {
			t.Fatalf("high watermark %d: LSO %d, want %d", c.hw, lso, c.lso)
		}
	}
	if n := e.st.nDecided.Load(); n != 0 {
		t.Fatalf("%d decided transactions still remembered with both markers below the high watermark", n)
	}
}

// On a log whose high watermark follows its end (the in-sync set is the
// leader alone), a transaction is decided as soon as its marker is
// appended, and nothing is kept for it.
func TestTxnDecidedForgottenWhenHighWatermarkFollowsEnd(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	e.append(txnBatch(t, 10, 0, 0, 2), log.AppendOptions{}) // 0-1
	e.mark(10, 0, batch.ControlCommit)                      // 2
	if n := e.st.nDecided.Load(); n != 0 {
		t.Fatalf("%d decided transactions remembered on a log whose high watermark is its end", n)
	}
	if lso := e.l.LastStableOffset(); lso != 3 {
		t.Fatalf("LSO %d, want 3", lso)
	}
}
