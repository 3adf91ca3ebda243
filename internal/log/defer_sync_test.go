package log

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// DeferSync: Append reports what must become durable instead of syncing;
// WaitDurable makes it so; a retried duplicate of a batch whose fsync is
// still pending is not reported durable either.
func TestDeferSync(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	e := newEnv(t, cfg)
	l := e.log()
	l.SetProducerGuard(&seqGuard{seen: map[[3]int64][2]int64{}})

	b := batch.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 7, 0, 0
	b.AddAt(1, []byte("k"), []byte("v"))
	b.AddAt(1, []byte("k2"), []byte("v2"))
	sent, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.Append(append([]byte(nil), sent...), AppendOptions{DeferSync: true})
	if err != nil || first.SyncOffset != 2 {
		t.Fatalf("deferred append: %+v %v (want SyncOffset 2)", first, err)
	}
	if d := l.durable.Load(); d >= 2 {
		t.Fatalf("durable %d before WaitDurable", d)
	}
	retry, err := l.Append(append([]byte(nil), sent...), AppendOptions{DeferSync: true})
	if err != nil || !retry.Duplicate || retry.SyncOffset != 2 {
		t.Fatalf("retry of a batch not yet durable: %+v %v (want a duplicate with SyncOffset 2)", retry, err)
	}
	if err := l.WaitDurable(first.SyncOffset); err != nil {
		t.Fatal(err)
	}
	if d := l.durable.Load(); d < 2 {
		t.Fatalf("durable %d after WaitDurable(2)", d)
	}
	again, err := l.Append(append([]byte(nil), sent...), AppendOptions{DeferSync: true})
	if err != nil || !again.Duplicate || again.SyncOffset != 0 {
		t.Fatalf("retry of a durable batch: %+v %v (want no SyncOffset)", again, err)
	}
	// Crash: what WaitDurable covered survives.
	e.crash(vfs.CrashOptions{})
	if end := e.log().LogEndOffset(); end != 2 {
		t.Fatalf("log end %d after a crash, want 2", end)
	}
}
