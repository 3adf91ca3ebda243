package log

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestCleanShutdownMarker(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, mkBatch(t, 3, 50, int64(i)))
	}
	leo := l.LogEndOffset()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join("/data", cleanShutdownFile)
	if _, err := e.fs.Stat(marker); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	// Everything was flushed: a power loss now loses nothing.
	e.fs.Crash(vfs.CrashOptions{})
	e.open()
	if _, err := e.fs.Stat(marker); err == nil {
		t.Fatal("marker still present after open")
	}
	l = e.log()
	if l.LogEndOffset() != leo || len(readAll(t, l, 0)) != 10 {
		t.Fatalf("leo %d want %d", l.LogEndOffset(), leo)
	}
	if ts, _, ok := l.OffsetForTimestamp(5); !ok || ts != 15 {
		t.Fatalf("timestamp lookup after clean open: %d %v", ts, ok)
	}
}

func TestRecoveryTornAndGarbledTail(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		e := newEnv(t, DefaultConfig())
		l := e.log()
		for i := 0; i < 5; i++ {
			mustAppend(t, l, mkBatch(t, 2, 300, int64(i)))
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		synced := l.LogEndOffset()
		for i := 0; i < 5; i++ {
			mustAppend(t, l, mkBatch(t, 2, 300, int64(i)))
		}
		e.crash(vfs.CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1)), TornTail: true, Garble: seed%2 == 0})
		l = e.log()
		if l.LogEndOffset() < synced {
			t.Fatalf("seed %d: lost synced data: leo %d < %d", seed, l.LogEndOffset(), synced)
		}
		readAll(t, l, 0) // checks CRCs and density
		// The log accepts appends after recovery.
		r := mustAppend(t, l, mkBatch(t, 1, 10, 1))
		if r.BaseOffset != l.LogEndOffset()-1 {
			t.Fatalf("append after recovery at %d", r.BaseOffset)
		}
	}
}

func TestRecoveryRebuildsIndexes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 500
	cfg.SegmentBytes = 8000
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 40; i++ {
		mustAppend(t, l, mkBatch(t, 1, 400, int64(100+i)))
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	idx0 := filepath.Join(l.Dir(), segmentName(segs[0].BaseOffset)+indexSuffix)
	want, _ := e.fs.ReadFile(idx0)
	// Garble the first segment's index, delete the second's time index.
	if err := e.fs.WriteFile(idx0, []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	_ = e.fs.Remove(filepath.Join(l.Dir(), segmentName(segs[1].BaseOffset)+timeIndexSuffix))
	e.open()
	l = e.log()
	readAll(t, l, 0)
	if got, _ := e.fs.ReadFile(idx0); string(got) != string(want) {
		t.Fatalf("rebuilt index differs: %d bytes vs %d", len(got), len(want))
	}
	if off, ts, ok := l.OffsetForTimestamp(120); !ok || off != 20 || ts != 120 {
		t.Fatalf("OffsetForTimestamp after rebuild: %d %d %v", off, ts, ok)
	}
}

func TestPreallocatedIndexAccepted(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 1, 5000, int64(i)))
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(l.Dir(), segmentName(0)+indexSuffix)
	data, _ := e.fs.ReadFile(idx)
	if len(data) == 0 {
		t.Fatal("expected index entries")
	}
	_ = e.fs.WriteFile(idx, append(data, make([]byte, 8*100)...)) // Kafka-style preallocation
	e.open()
	l = e.log()
	readAll(t, l, 0) // a clean start reads the log on first use
	if got, _ := e.fs.ReadFile(idx); len(got) != len(data) {
		t.Fatalf("preallocated index not trimmed: %d", len(got))
	}
}

func TestBitFlipAfterRecoveryPointIsCut(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	var sizes []int64
	for i := 0; i < 6; i++ {
		mustAppend(t, l, mkBatch(t, 1, 200, 1))
		sizes = append(sizes, l.Size())
	}
	// Crash without flushing anything beyond creation, but with the page
	// cache kept: the data is there, then a byte of batch 3 rots.
	e.fs.ProcessCrash()
	logFile := filepath.Join(l.Dir(), segmentName(0)+logSuffix)
	_ = e.fs.FlipByte(logFile, sizes[2]+100, 0x40)
	e.open()
	l = e.log()
	if l.LogEndOffset() != 3 {
		t.Fatalf("leo %d, want 3 (cut at the corrupt batch)", l.LogEndOffset())
	}
	readAll(t, l, 0)
}

func TestENOSPC(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	mustAppend(t, l, mkBatch(t, 2, 100, 1))
	before, _ := l.ReadBytes(0, 1<<20)
	used := e.fs.Used()
	e.fs.SetSpaceLimit(used + 150)
	_, err := l.Append(mkBatch(t, 2, 100, 1), AppendOptions{})
	if KafkaCode(err) != CodeKafkaStorageError || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v", err)
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("leo moved to %d", l.LogEndOffset())
	}
	after, _ := l.ReadBytes(0, 1<<20)
	if string(before) != string(after) {
		t.Fatal("failed append changed the log")
	}
	if data, _ := e.fs.ReadFile(filepath.Join(l.Dir(), segmentName(0)+logSuffix)); len(data) != len(before) {
		t.Fatalf("partial write left in the file: %d vs %d", len(data), len(before))
	}
	e.fs.SetSpaceLimit(-1)
	r := mustAppend(t, l, mkBatch(t, 2, 100, 1))
	if r.BaseOffset != 2 {
		t.Fatalf("append after space freed at %d", r.BaseOffset)
	}
	readAll(t, l, 0)
	// A full disk during a roll fails the append and keeps the log usable.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, mkBatch(t, 1, 10, 1))
	e.fs.SetFault(func(op, name string) error {
		if op == "open" && filepath.Ext(name) == ".log" {
			return syscall.ENOSPC
		}
		return nil
	})
	if err := l.Roll(); KafkaCode(err) != CodeKafkaStorageError {
		t.Fatalf("roll on full disk: %v", err)
	}
	e.fs.SetFault(nil)
	mustAppend(t, l, mkBatch(t, 1, 10, 1))
	readAll(t, l, 0)
}

func TestFsyncFailureFailsLog(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	e := newEnv(t, cfg)
	l := e.log()
	e.fs.SetFault(func(op, name string) error {
		if op == "sync" {
			return syscall.EIO
		}
		return nil
	})
	if _, err := l.Append(mkBatch(t, 1, 10, 1), AppendOptions{}); KafkaCode(err) != CodeKafkaStorageError {
		t.Fatalf("got %v", err)
	}
	e.fs.SetFault(nil)
	if _, err := l.Append(mkBatch(t, 1, 10, 1), AppendOptions{}); KafkaCode(err) != CodeKafkaStorageError || l.Err() == nil {
		t.Fatalf("log not failed after fsync error: %v", err)
	}
}

func TestGroupCommitDurability(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	e := newEnv(t, cfg)
	l := e.log()
	var mu sync.Mutex
	acked := map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				r, err := l.Append(mkBatch(t, 1, 100, 1), AppendOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[r.BaseOffset] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	e.crash(vfs.CrashOptions{})
	l = e.log()
	hs := readAll(t, l, 0)
	if len(hs) != 400 || len(acked) != 400 {
		t.Fatalf("after power loss %d batches, %d acked", len(hs), len(acked))
	}
}

func TestUnsyncedLostOnPowerLossButNotOnProcessCrash(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	for i := 0; i < 5; i++ {
		mustAppend(t, l, mkBatch(t, 1, 100, 1))
	}
	e.fs.ProcessCrash()
	e.open()
	if got := e.log().LogEndOffset(); got != 5 {
		t.Fatalf("process crash lost data: leo %d", got)
	}
	l = e.log()
	mustAppend(t, l, mkBatch(t, 1, 100, 1))
	e.crash(vfs.CrashOptions{})
	// Recovery on open flushed the 5; the 6th was never synced.
	if got := e.log().LogEndOffset(); got != 5 {
		t.Fatalf("leo after power loss %d, want 5", got)
	}
}

func TestFlushMs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMs = 1000
	e := newEnv(t, cfg)
	l := e.log()
	mustAppend(t, l, mkBatch(t, 1, 100, e.clock.Now().UnixMilli()))
	e.m.RunHousekeeping()
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed before flush.ms")
	}
	e.clock.Advance(1500 * 1e6)
	e.m.RunHousekeeping()
	if l.RecoveryPoint() != 1 {
		t.Fatalf("recovery point %d after flush.ms", l.RecoveryPoint())
	}
	e.crash(vfs.CrashOptions{})
	if e.log().LogEndOffset() != 1 {
		t.Fatal("flushed data lost")
	}
}

func TestNoCorruptBatchServed(t *testing.T) {
	// Flip every byte position of a small segment once; recovery must never
	// serve a batch with a bad CRC.
	e := newEnv(t, DefaultConfig())
	l := e.log()
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 1, 20, 1))
	}
	e.fs.ProcessCrash()
	logFile := filepath.Join(l.Dir(), segmentName(0)+logSuffix)
	data, _ := e.fs.ReadFile(logFile)
	for off := 0; off < len(data); off += 3 {
		_ = e.fs.WriteFile(logFile, data)
		_ = e.fs.FlipByte(logFile, int64(off), 0x10)
		_ = e.fs.WriteFile(filepath.Join("/data", recoveryPointFile), []byte("0\n0\n"))
		e.open()
		readAllMode(t, e.log(), e.log().LogStartOffset(), false)
		e.fs.ProcessCrash()
	}
	_ = batch.HeaderSize
}
