package log

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestRollOnSegmentBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 30; i++ {
		mustAppend(t, l, mkBatch(t, 2, 400, 1))
	}
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	for i, s := range segs {
		if s.Size > cfg.SegmentBytes {
			t.Fatalf("segment %d has %d bytes", i, s.Size)
		}
		if i > 0 && s.BaseOffset != segs[i-1].NextOffset {
			t.Fatalf("segment %d base %d, previous ends at %d", i, s.BaseOffset, segs[i-1].NextOffset)
		}
	}
	ents, _ := e.fs.ReadDir(l.Dir())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := segmentName(segs[1].BaseOffset) + ".log"
	if !strings.Contains(strings.Join(names, " "), want) || len(want) != 24 {
		t.Fatalf("no %s in %v", want, names)
	}
	readAll(t, l, 0)
}

func TestRollOnIndexFull(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 0 // an entry per batch
	cfg.SegmentIndexBytes = 10 * 12
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 50; i++ {
		mustAppend(t, l, mkBatch(t, 1, 10, int64(i)))
	}
	if n := len(l.Segments()); n < 4 {
		t.Fatalf("index-full rolls gave %d segments", n)
	}
	readAll(t, l, 0)
}

func TestRollByTimeWithoutAppend(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentMs = 60_000
	e := newEnv(t, cfg)
	l := e.log()
	mustAppend(t, l, mkBatch(t, 1, 10, e.clock.Now().UnixMilli()))
	e.m.RunHousekeeping()
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("rolled too early: %d segments", n)
	}
	e.clock.Advance(61 * time.Second)
	e.m.RunHousekeeping()
	segs := l.Segments()
	if len(segs) != 2 || segs[1].BaseOffset != 1 || !segs[1].Active {
		t.Fatalf("idle segment not rolled: %+v", segs)
	}
	// The rolled segment is flushed by housekeeping: recovery point moved.
	if l.RecoveryPoint() != 1 {
		t.Fatalf("recovery point %d", l.RecoveryPoint())
	}
	// Empty active segment is never rolled.
	e.clock.Advance(time.Hour)
	e.m.RunHousekeeping()
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("empty segment rolled: %d", n)
	}
}

// A restart does not reset segment.ms: the idle active segment still rolls
// segment.ms after its first batch, not after the restart.
func TestRollByTimeAcrossRestart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentMs = 60_000
	e := newEnv(t, cfg)
	mustAppend(t, e.log(), mkBatch(t, 1, 10, e.clock.Now().UnixMilli()))
	e.clock.Advance(40 * time.Second)
	e.restart()
	e.m.RunHousekeeping()
	if n := len(e.log().Segments()); n != 1 {
		t.Fatalf("rolled too early after restart: %d segments", n)
	}
	e.clock.Advance(21 * time.Second) // 61 s after the first batch, 21 s after the restart
	e.m.RunHousekeeping()
	if n := len(e.log().Segments()); n != 2 {
		t.Fatalf("idle segment not rolled 61 s after its first batch (restart at 40 s): %d segments", n)
	}
}

func TestRetentionMs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.RetentionMs = 10_000
	cfg.FileDeleteDelayMs = 5_000
	e := newEnv(t, cfg)
	l := e.log()
	now := e.clock.Now().UnixMilli()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, mkBatch(t, 1, 500, now-60_000)) // old
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 1, 500, now)) // fresh
	}
	before := l.Segments()
	// A reader holds a range in the oldest segment across the deletion.
	held, err := l.Read(0, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	e.m.RunHousekeeping()
	after := l.Segments()
	if len(after) >= len(before) {
		t.Fatalf("nothing deleted: %d → %d segments", len(before), len(after))
	}
	if l.LogStartOffset() != after[0].BaseOffset || l.LogStartOffset() == 0 {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), after[0].BaseOffset)
	}
	for _, s := range after {
		if s.Size > 0 && s.LargestTimestamp < now-10_000 {
			t.Fatalf("expired segment %d kept", s.BaseOffset)
		}
	}
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	// The held range is still readable until file.delete.delay.ms passes.
	if _, err := held.Bytes(); err != nil {
		t.Fatalf("in-flight read lost its file: %v", err)
	}
	deleted := filepath.Join(l.Dir(), segmentName(0)+".log.deleted")
	if _, err := e.fs.Stat(deleted); err != nil {
		t.Fatalf("no .deleted file: %v", err)
	}
	e.clock.Advance(6 * time.Second)
	e.m.RunHousekeeping()
	if _, err := e.fs.Stat(deleted); err == nil {
		t.Fatal(".deleted file not removed after the delay")
	}
	// Start offset survives a restart (checkpoint).
	start := l.LogStartOffset()
	e.restart()
	if got := e.log().LogStartOffset(); got != start {
		t.Fatalf("log start after restart %d, want %d", got, start)
	}
}

func TestRetentionBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.RetentionBytes = 5000
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 40; i++ {
		mustAppend(t, l, mkBatch(t, 1, 500, e.clock.Now().UnixMilli()))
	}
	e.m.RunHousekeeping()
	if l.Size() > 5000+2048 {
		t.Fatalf("size %d after retention.bytes 5000", l.Size())
	}
	if l.Size() < 5000-2048 {
		t.Fatalf("deleted too much: %d", l.Size())
	}
	readAll(t, l, l.LogStartOffset())
}

func TestRetentionDisabledForCompactOnly(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.RetentionBytes = 100
	cfg.DeleteRetention = false
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 20; i++ {
		mustAppend(t, l, mkBatch(t, 1, 500, 1))
	}
	e.m.RunHousekeeping()
	if l.LogStartOffset() != 0 {
		t.Fatalf("retention applied without the delete policy")
	}
}

func TestTruncatePrefix(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 20; i++ {
		mustAppend(t, l, mkBatch(t, 2, 500, 1))
	}
	if err := l.TruncatePrefix(21); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 21 {
		t.Fatalf("start %d", l.LogStartOffset())
	}
	if l.Segments()[0].BaseOffset > 21 {
		t.Fatalf("deleted the segment holding the new start")
	}
	if _, err := l.Read(20, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	b, err := l.ReadBytes(21, 1)
	if err != nil || len(b) == 0 {
		t.Fatalf("read at start: %v", err)
	}
	if err := l.TruncatePrefix(1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond HW: %v", err)
	}
	// Checkpointed immediately: survives a crash without a clean shutdown.
	e.crash(vfs.CrashOptions{})
	if got := e.log().LogStartOffset(); got != 21 {
		t.Fatalf("start after crash %d", got)
	}
	// Everything: the log is empty and starts at its end.
	l = e.log()
	end := l.LogEndOffset()
	if err := l.TruncatePrefix(end); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != l.LogEndOffset() || l.Size() != 0 {
		t.Fatalf("start %d leo %d size %d", l.LogStartOffset(), l.LogEndOffset(), l.Size())
	}
	r := mustAppend(t, l, mkBatch(t, 1, 5, 1))
	if r.BaseOffset != end {
		t.Fatalf("offset reused: %d", r.BaseOffset)
	}
}

// The background goroutine applies retention only every
// RetentionCheckInterval (log.retention.check.interval.ms): records past
// retention.ms stay readable until the next check, while the other
// housekeeping (here: many passes) goes on.
func TestRetentionCheckInterval(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetentionMs = 1000
	e := newEnv(t, cfg)
	mustAppend(t, e.log(), mkBatch(t, 3, 10, e.clock.Now().UnixMilli()))
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour) // far past retention.ms

	reopen := func(check time.Duration) {
		t.Helper()
		o := e.opts()
		o.HousekeepingInterval = time.Millisecond
		o.RetentionCheckInterval = check
		m, err := OpenManager(e.fs, "/data", o)
		if err != nil {
			t.Fatal(err)
		}
		e.m = m
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// An hour between checks (the first after 30 s): still readable
	// after many passes.
	reopen(time.Hour)
	waitFor("20 housekeeping passes", func() bool { return e.m.HousekeepingPasses() >= 20 })
	if got := e.log().LogStartOffset(); got != 0 {
		t.Fatalf("retention applied before its check: log start %d", got)
	}
	if n := len(readAll(t, e.log(), 0)); n == 0 {
		t.Fatal("records past retention not readable before the next check")
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	// A short interval: the next check deletes them.
	reopen(5 * time.Millisecond)
	defer e.m.Close()
	waitFor("retention to delete the expired segment", func() bool { return e.log().LogStartOffset() == 3 })
}
