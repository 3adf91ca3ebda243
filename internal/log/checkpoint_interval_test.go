package log

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// With log.flush.offset.checkpoint.interval.ms set, housekeeping writes a
// moved recovery point only once the interval has passed since its last
// comparison; a suffix truncation and Close still write at once.
func TestRecoveryPointCheckpointInterval(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMs = 1000
	e := &env{t: t, fs: vfs.NewMemFS(), clock: newClock(), cfg: cfg}
	o := e.opts()
	o.RecoveryPointCheckpointInterval = time.Minute
	o.LogStartCheckpointInterval = time.Minute
	m, err := OpenManager(e.fs, "/data", o)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	l := e.log()
	checkpointed := func() int64 {
		t.Helper()
		offs, err := readPartitionOffsets(e.fs, filepath.Join("/data", recoveryPointFile))
		if err != nil {
			t.Fatal(err)
		}
		if rp, ok := offs.Get("t", 0); ok {
			return rp
		}
		return -1
	}
	m.RunHousekeeping() // compared now: the next comparison is a minute away
	mustAppend(t, l, mkBatch(t, 1, 100, e.clock.Now().UnixMilli()))
	e.clock.Advance(1500 * time.Millisecond)
	m.RunHousekeeping() // flush.ms flushes: the recovery point moves to 1
	if l.RecoveryPoint() != 1 {
		t.Fatalf("recovery point %d after flush.ms", l.RecoveryPoint())
	}
	if got := checkpointed(); got == 1 {
		t.Fatal("recovery point checkpointed before the interval")
	}
	e.clock.Advance(59 * time.Second)
	m.RunHousekeeping()
	if got := checkpointed(); got != 1 {
		t.Fatalf("checkpointed recovery point %d after the interval, want 1", got)
	}
	mustAppend(t, l, mkBatch(t, 1, 100, e.clock.Now().UnixMilli()))
	e.clock.Advance(1500 * time.Millisecond)
	m.RunHousekeeping() // flushes to 2, not checkpointed yet
	if got := checkpointed(); got != 1 {
		t.Fatalf("checkpointed recovery point %d before the interval, want 1", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := checkpointed(); got != 2 {
		t.Fatalf("checkpointed recovery point %d after Close, want 2", got)
	}
}
