package producer

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

func idempotentBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := batch.NewBuilder()
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

// TestRebuildFromLog runs the guard inside a real partition log, restarts
// the log with and without a snapshot, and checks that retries are still
// recognised and gaps still refused.
func TestRebuildFromLog(t *testing.T) {
	for _, withSnapshot := range []bool{false, true} {
		dir := t.TempDir()
		fsys := vfs.OS()
		states := map[string]*State{}
		open := func() (*log.Manager, *log.Log, *State) {
			st := NewState()
			m, err := log.OpenManager(fsys, dir, log.ManagerOptions{
				HousekeepingInterval: -1,
				ProducerGuard: func(topic string, p int32) log.ProducerGuard {
					return NewGuard(st)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			l, err := m.Open("t", 0, log.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Rebuild(fsys, l, time.Now().UnixMilli(), 86400000); err != nil {
				t.Fatal(err)
			}
			states["t"] = st
			return m, l, st
		}
		m, l, st := open()
		for i := int32(0); i < 7; i++ {
			r, err := l.Append(idempotentBatch(t, 5, 0, i*2, 2), log.AppendOptions{})
			if err != nil || r.Duplicate || r.BaseOffset != int64(i*2) {
				t.Fatalf("append %d: %+v %v", i, r, err)
			}
		}
		if withSnapshot {
			if err := st.WriteSnapshot(fsys, l.Dir(), l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			// Written after the snapshot: replayed on open.
			if _, err := l.Append(idempotentBatch(t, 5, 0, 14, 1), log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if _, err := l.Append(idempotentBatch(t, 5, 0, 14, 1), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}

		m, l, st = open()
		if st.Len() != 1 {
			t.Fatalf("snapshot=%v: %d producers after restart", withSnapshot, st.Len())
		}
		// The retried last batch gets its original offset.
		r, err := l.Append(idempotentBatch(t, 5, 0, 14, 1), log.AppendOptions{})
		if err != nil || !r.Duplicate || r.BaseOffset != 14 {
			t.Fatalf("snapshot=%v: retry after restart: %+v %v", withSnapshot, r, err)
		}
		// An earlier batch: remembered when the whole log was replayed; with a
		// snapshot only batches since the snapshot plus the snapshot's last.
		r, err = l.Append(idempotentBatch(t, 5, 0, 12, 2), log.AppendOptions{})
		if err != nil || !r.Duplicate || r.BaseOffset != 12 {
			t.Fatalf("snapshot=%v: retry of seq 12: %+v %v", withSnapshot, r, err)
		}
		// A gap is refused, the next sequence accepted.
		if _, err := l.Append(idempotentBatch(t, 5, 0, 16, 1), log.AppendOptions{}); log.KafkaCode(err) != CodeOutOfOrderSequence {
			t.Fatalf("snapshot=%v: gap: %v", withSnapshot, err)
		}
		if r, err := l.Append(idempotentBatch(t, 5, 0, 15, 1), log.AppendOptions{}); err != nil || r.BaseOffset != 15 {
			t.Fatalf("snapshot=%v: next: %+v %v", withSnapshot, r, err)
		}
		m.Close()
	}
}
