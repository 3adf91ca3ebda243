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
	for _, c := range []struct{ hw, lso int64 }{{6, 2}, {7, 5}, {8, 8}} {
		e.l.SetHighWatermark(c.hw)
		if lso := e.l.LastStableOffset(); lso != c.lso {
			t.Fatalf("high watermark %d: LSO %d, want %d", c.hw, lso, c.lso)
		}
	}
	if n := e.st.nDecided.Load(); n != 0 {
		t.Fatalf("%d decided transactions still remembered with both markers below the high watermark", n)
	}
}
