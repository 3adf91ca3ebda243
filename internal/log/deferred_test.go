package log

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// After a clean shutdown a log is entered unloaded with its checkpointed
// offsets, read on first use (once, however many callers race for it, with
// the OnLoad hook before any of them proceeds), and a close of a log never
// used writes nothing into its directory. After an unclean shutdown a log
// is recovered before anything of it is answered.
func TestDeferredLoadAfterCleanShutdown(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	for _, tp := range []string{"a", "b"} {
		l, err := e.m.Open(tp, 0, e.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			mustAppend(t, l, mkBatch(t, 2, 100, int64(i)))
		}
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	var hooks atomic.Int32
	var hookLEO atomic.Int64
	o := e.opts()
	o.OnLoad = func(v LoadView) error {
		hooks.Add(1)
		hookLEO.Store(v.LogEndOffset())
		// The view reads the log while other callers wait.
		n := 0
		if err := v.ScanBatches(0, func(h batch.Header, _ BatchPosition) bool { n++; return true }); err != nil || n != 3 {
			t.Errorf("scan from the hook: %d batches, %v", n, err)
		}
		if _, err := v.ReadBytes(0, 1<<20); err != nil {
			t.Errorf("read from the hook: %v", err)
		}
		return nil
	}
	m, err := OpenManager(e.fs, "/data", o)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	a, b := m.Get("a", 0), m.Get("b", 0)
	if a.Loaded() || b.Loaded() || !a.Deferred() {
		t.Fatal("logs loaded at a clean start")
	}
	if a.LogEndOffset() != 6 || a.LogStartOffset() != 0 || a.HighWatermark() != 6 || a.RecoveryPoint() != 6 || a.Loaded() {
		t.Fatalf("offsets before the load: end %d start %d hw %d rp %d", a.LogEndOffset(), a.LogStartOffset(), a.HighWatermark(), a.RecoveryPoint())
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := readAll(t, a, 0); len(got) != 3 {
				t.Errorf("read %d batches", len(got))
			}
		}()
	}
	wg.Wait()
	if !a.Loaded() || hooks.Load() != 1 || hookLEO.Load() != 6 {
		t.Fatalf("loaded %v, hooks %d (end %d)", a.Loaded(), hooks.Load(), hookLEO.Load())
	}
	if r := mustAppend(t, a, mkBatch(t, 1, 10, 9)); r.BaseOffset != 6 {
		t.Fatalf("append after the load at %d", r.BaseOffset)
	}
	// b is never used: closing it leaves its files as they were.
	before := snapshotDir(t, e.fs, b.Dir())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if after := snapshotDir(t, e.fs, b.Dir()); before != after {
		t.Fatalf("an unused log's directory changed at close:\n%s\n%s", before, after)
	}

	// Reopened cleanly again: b's offsets are still right.
	e.open()
	if got := e.m.Get("b", 0); got.LogEndOffset() != 6 || len(readAll(t, got, 0)) != 3 {
		t.Fatalf("b after two clean restarts: end %d", got.LogEndOffset())
	}
	if got := e.m.Get("a", 0); got.LogEndOffset() != 7 {
		t.Fatalf("a after two clean restarts: end %d", got.LogEndOffset())
	}

	// A crash: no clean marker. Nothing is answered before a log is
	// recovered: its first use, its offsets included, recovers it (the
	// unsynced record is gone).
	mustAppend(t, e.m.Get("a", 0), mkBatch(t, 1, 10, 10))
	e.crash(vfs.CrashOptions{})
	a, b = e.m.Get("a", 0), e.m.Get("b", 0)
	if a.Loaded() || b.Loaded() {
		t.Fatal("logs recovered before their first use")
	}
	if got := a.LogEndOffset(); got != 7 || !a.Loaded() {
		t.Fatalf("a after the crash: end %d, loaded %v", got, a.Loaded())
	}
	// b is never used, and the crash left garbage after its last batch (a
	// torn write): a clean close lists it, with its recovery point, for
	// the next start to recover, and writes the clean-shutdown marker.
	garbage := []byte("torn write, not a batch")
	bseg := filepath.Join(b.Dir(), segmentName(0)+logSuffix)
	segData, err := e.fs.ReadFile(bseg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fs.WriteFile(bseg, append(segData, garbage...)); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Stat("/data/" + cleanShutdownFile); err != nil {
		t.Fatal("no clean-shutdown marker after a clean close with an unrecovered log")
	}
	if got, err := readUnrecovered(e.fs, "/data"); err != nil || got.Len() != 1 || got.Map()[TopicPartition{"b", 0}] != 6 {
		t.Fatalf("unrecovered list %v (%v); want b-0 at 6", got.Map(), err)
	}
	// The next start enters a as after any clean shutdown, and recovers b
	// (the garbage cut) before it answers anything of it.
	e.open()
	if _, err := e.fs.Stat("/data/" + unrecoveredFile); err == nil {
		t.Fatal("the unrecovered list survived the start that read it")
	}
	if a = e.m.Get("a", 0); !a.OffsetsKnown() || a.Loaded() || a.LogEndOffset() != 7 || a.Loaded() {
		t.Fatalf("a after the clean restart: end %d, offsets known %v, loaded %v", a.LogEndOffset(), a.OffsetsKnown(), a.Loaded())
	}
	if b = e.m.Get("b", 0); b.OffsetsKnown() {
		t.Fatal("b entered as clean: it was never recovered since the crash")
	}
	if b.LogStartOffset() != 0 || b.LogEndOffset() != 6 || len(readAll(t, b, 0)) != 3 {
		t.Fatalf("b recovered at the next start: end %d", b.LogEndOffset())
	}
	if r := mustAppend(t, b, mkBatch(t, 1, 10, 12)); r.BaseOffset != 6 || len(readAll(t, b, 0)) != 4 {
		t.Fatalf("append to b after its recovery at %d", r.BaseOffset)
	}
	if got, _ := e.fs.ReadFile(bseg); bytes.Contains(got, garbage) {
		t.Fatal("b's torn tail kept by its recovery")
	}
	// The background loader loads what is left, and stops at once when there is nothing.
	mustAppend(t, e.m.Get("a", 0), mkBatch(t, 1, 10, 11)) // every log loaded: a clean close
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Stat("/data/" + cleanShutdownFile); err != nil {
		t.Fatal("no clean-shutdown marker once every log was recovered")
	}
	if _, err := e.fs.Stat("/data/" + unrecoveredFile); err == nil {
		t.Fatal("an unrecovered list written with every log recovered")
	}
	e.open()
	if n, _ := e.m.LoadDeferred(2, nil); n != 2 {
		t.Fatalf("LoadDeferred loaded %d logs, want 2", n)
	}
	if n, _ := e.m.LoadDeferred(2, nil); n != 0 {
		t.Fatalf("LoadDeferred again loaded %d", n)
	}
}

// A log detached (deleted) before it was ever loaded is never loaded.
func TestDeferredLogDeletedUnloaded(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	mustAppend(t, e.log(), mkBatch(t, 1, 10, 1))
	e.restart()
	l := e.m.Get("t", 0)
	if l.Loaded() {
		t.Fatal("loaded")
	}
	if err := e.m.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100, true); err == nil {
		t.Fatal("read of a deleted, never loaded log succeeded")
	}
	if l.Loaded() {
		t.Fatal("a deleted log was loaded")
	}
}

// snapshotDir lists a directory's files with their sizes and contents' length.
func snapshotDir(t *testing.T, fsys vfs.FS, dir string) string {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, e := range ents {
		data, _ := vfs.ReadFile(fsys, dir+"/"+e.Name())
		s += fmt.Sprintf("%s %d %x\n", e.Name(), len(data), sha256.Sum256(data))
	}
	return s
}

// A partition whose directory cannot be read when it is first used fails
// with KAFKA_STORAGE_ERROR (reads and appends) instead of serving from a
// half-read log; the others are not affected, and a clean close keeps its
// files as they were.
func TestDeferredLoadFailure(t *testing.T) {
	mem := vfs.NewMemFS()
	faulty := vfs.NewFaulty(mem)
	o := ManagerOptions{Logger: quietLogger(), HousekeepingInterval: -1}
	m, err := OpenManager(faulty, "/data", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []string{"good", "bad"} {
		l, err := m.Open(tp, 0, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, mkBatch(t, 2, 10, 1))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = OpenManager(faulty, "/data", o); err != nil {
		t.Fatal(err)
	}
	faulty.Add(vfs.Rule{Op: "readdir", PathContains: "bad-0"})
	bad, good := m.Get("bad", 0), m.Get("good", 0)
	if _, err := bad.Read(0, 1<<20, true); !isStorageErr(err) {
		t.Fatalf("read of a partition that cannot be loaded: %v", err)
	}
	if _, err := bad.Append(mkBatch(t, 1, 10, 2), AppendOptions{}); !isStorageErr(err) {
		t.Fatalf("append to a partition that cannot be loaded: %v", err)
	}
	if bad.Loaded() || bad.Segments() != nil || bad.Err() == nil {
		t.Fatalf("failed partition: loaded %v, err %v", bad.Loaded(), bad.Err())
	}
	if got := readAll(t, good, 0); len(got) != 1 {
		t.Fatalf("the other partition: %d batches", len(got))
	}
	faulty.Clear()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The next start reads it.
	if m, err = OpenManager(faulty, "/data", o); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := readAll(t, m.Get("bad", 0), 0); len(got) != 1 {
		t.Fatalf("after a restart: %d batches", len(got))
	}
}

func isStorageErr(err error) bool {
	var se *StorageError
	return errors.As(err, &se)
}

// A deferred log's first use may be SetHighWatermark (the partition layer
// applying new metadata): its load runs the OnLoad hook, whose producer
// rebuild restores aborted-transaction index entries under the log's lock,
// so the load must not run with that lock held (it deadlocked the metadata
// publisher of a restarted broker: docs/reliability.md, finding 16).
func TestDeferredLoadBySetHighWatermark(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l, err := e.m.Open("a", 0, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 2, 100, int64(i)))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// A crash: the log is entered unloaded, its offsets unknown until it
	// is recovered.
	e.fs.Crash(vfs.CrashOptions{})
	o := e.opts()
	o.OnLoad = func(v LoadView) error {
		return v.RestoreAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: 2})
	}
	m, err := OpenManager(e.fs, "/data", o)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	a := m.Get("a", 0)
	if a.Loaded() {
		t.Fatal("log loaded at the start")
	}
	done := make(chan struct{})
	go func() {
		a.SetHighWatermark(4) // kept for the load (deferred_hw.go)
		_ = a.HighWatermark() // loads it
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("SetHighWatermark and HighWatermark on a deferred log still blocked after 60 s (its load deadlocked)")
	}
	// (the high watermark followed the log end until then, and never moves back)
	if hw, leo := a.HighWatermark(), a.LogEndOffset(); !a.Loaded() || leo != 6 || hw != 6 {
		t.Fatalf("after SetHighWatermark(4): loaded %v, log end %d, high watermark %d", a.Loaded(), leo, hw)
	}
}

// A start that finds the clean-shutdown marker but cannot read a file the
// clean start relies on (the recovery-point checkpoint, the list of
// partitions left unrecovered) recovers every partition, reports no clean
// shutdown, and still removes the marker: a crash of that run must not be
// taken for a clean shutdown at the next start.
func TestUnreadableFileRemovesMarker(t *testing.T) {
	for _, file := range []string{recoveryPointFile, unrecoveredFile} {
		t.Run(file, func(t *testing.T) {
			e := newEnv(t, DefaultConfig())
			l := e.log()
			mustAppend(t, l, mkBatch(t, 2, 100, 0))
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := e.fs.WriteFile(filepath.Join("/data", file), []byte("not a checkpoint\n")); err != nil {
				t.Fatal(err)
			}
			e.open()
			if _, err := e.fs.Stat(filepath.Join("/data", cleanShutdownFile)); err == nil {
				t.Fatal("clean-shutdown marker left by a start that recovers")
			}
			if got := e.m.PreviousBrokerEpoch(); got != -1 {
				t.Fatalf("previous broker epoch %d reported by a start that recovers", got)
			}
			if l = e.m.Get("t", 0); l.OffsetsKnown() {
				t.Fatal("log entered as after a clean shutdown")
			}
			// A crash of this run: the next start recovers.
			mustAppend(t, l, mkBatch(t, 1, 10, 1))
			e.crash(vfs.CrashOptions{})
			if l = e.m.Get("t", 0); l.OffsetsKnown() {
				t.Fatal("log entered as clean after a crash")
			}
		})
	}
}
