package log

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestTruncateToAndLeaderEpochs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3000
	e := newEnv(t, cfg)
	l := e.log()
	// epoch 1: offsets 0..19, epoch 3: 20..39, epoch 5: 40..59
	for _, ep := range []int32{1, 3, 5} {
		for i := 0; i < 10; i++ {
			if _, err := l.Append(mkBatch(t, 2, 300, int64(i)), AppendOptions{LeaderEpoch: ep}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		in     int32
		epoch  int32
		endOff int64
	}{
		{5, 5, 60}, {3, 3, 40}, {4, 3, 40}, {1, 1, 20}, {0, 0, 0}, {6, -1, -1}, {-1, -1, -1},
	} {
		ep, off := l.EndOffsetForLeaderEpoch(tc.in)
		if ep != tc.epoch || off != tc.endOff {
			t.Errorf("epoch %d: got (%d, %d), want (%d, %d)", tc.in, ep, off, tc.epoch, tc.endOff)
		}
	}
	// Truncate inside a batch: the whole batch goes.
	if err := l.TruncateTo(45); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 44 {
		t.Fatalf("leo %d, want 44", l.LogEndOffset())
	}
	readAll(t, l, 0)
	r := mustAppend(t, l, mkBatch(t, 1, 10, 1))
	if r.BaseOffset != 44 {
		t.Fatalf("append after truncate at %d", r.BaseOffset)
	}
	// Truncate into an earlier segment and an earlier epoch.
	if err := l.TruncateTo(30); err != nil {
		t.Fatal(err)
	}
	if ep, off := l.EndOffsetForLeaderEpoch(3); ep != 3 || off != 30 {
		t.Fatalf("after truncate: (%d, %d)", ep, off)
	}
	if ep, _ := l.EndOffsetForLeaderEpoch(5); ep != -1 {
		t.Fatalf("epoch 5 should be gone, got %d", ep)
	}
	readAll(t, l, 0)
	// Survives a crash (epochs and the lowered recovery point checkpointed).
	if _, err := l.Append(mkBatch(t, 2, 10, 1), AppendOptions{LeaderEpoch: 7}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	e.crash(vfs.CrashOptions{})
	l = e.log()
	if l.LogEndOffset() != 32 {
		t.Fatalf("leo after crash %d", l.LogEndOffset())
	}
	if ep, off := l.EndOffsetForLeaderEpoch(3); ep != 3 || off != 30 {
		t.Fatalf("epochs after crash: (%d, %d)", ep, off)
	}
	data, _ := e.fs.ReadFile(filepath.Join(l.Dir(), leaderEpochFile))
	if string(data) != "0\n3\n1 0\n3 20\n7 30\n" {
		t.Fatalf("leader-epoch-checkpoint:\n%s", data)
	}
	// Below the log start: the log restarts empty at the offset.
	if err := l.TruncatePrefix(10); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 5 || l.LogEndOffset() != 5 || l.Size() != 0 {
		t.Fatalf("start %d leo %d size %d", l.LogStartOffset(), l.LogEndOffset(), l.Size())
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 300
	cfg.RetentionMs = -1
	e := newEnv(t, cfg)
	l := e.log()
	// Batch i holds 3 records with timestamps 100i, 100i+10, 100i+20.
	for i := int64(0); i < 30; i++ {
		b := batch.NewBuilder()
		b.BaseTimestamp = 100 * i
		for j := int64(0); j < 3; j++ {
			b.AddAt(100*i+10*j, []byte("k"), make([]byte, 100))
		}
		raw, _ := b.Build()
		mustAppend(t, l, raw)
	}
	for _, tc := range []struct{ ts, off, got int64 }{
		{0, 0, 0}, {5, 1, 10}, {10, 1, 10}, {25, 3, 100}, {1510, 46, 1510}, {2920, 89, 2920},
	} {
		off, ts, ok := l.OffsetForTimestamp(tc.ts)
		if !ok || off != tc.off || ts != tc.got {
			t.Errorf("ts %d: got (%d, %d, %v), want (%d, %d)", tc.ts, off, ts, ok, tc.off, tc.got)
		}
	}
	if _, _, ok := l.OffsetForTimestamp(2921); ok {
		t.Error("found a record later than the last")
	}
	if off, ts, ok := l.MaxTimestamp(); !ok || off != 89 || ts != 2920 {
		t.Errorf("MaxTimestamp: %d %d %v", off, ts, ok)
	}
}

func TestWait(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	ch := l.Wait()
	select {
	case <-ch:
		t.Fatal("closed before any append")
	default:
	}
	raw := mkBatch(t, 1, 5, 1)
	go func() {
		if _, err := l.Append(raw, AppendOptions{}); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait not woken by append")
	}
	if l.LogEndOffset() != 1 {
		t.Fatal("woken before the data was visible")
	}
	ch = l.Wait()
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("Wait not woken by truncation")
	}
}

func TestManagerPartitionsCreateDelete(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	for _, tp := range []TopicPartition{{"a-b", 0}, {"a-b", 1}, {"x.y_z", 3}} {
		l, err := e.m.Create(tp.Topic, tp.Partition, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, mkBatch(t, 1, 5, 1))
	}
	if _, err := e.m.Create("a-b", 0, DefaultConfig()); !errors.Is(err, ErrExists) {
		t.Fatalf("create twice: %v", err)
	}
	for _, bad := range []string{"", "..", "a/b", "a b"} {
		if _, err := e.m.Create(bad, 0, DefaultConfig()); err == nil {
			t.Errorf("accepted topic %q", bad)
		}
	}
	e.restart()
	got := e.m.Partitions()
	if len(got) != 3 || got[0] != (TopicPartition{"a-b", 0}) || got[2] != (TopicPartition{"x.y_z", 3}) {
		t.Fatalf("partitions %v", got)
	}
	if e.m.Get("a-b", 1).LogEndOffset() != 1 {
		t.Fatal("data lost over restart")
	}
	if err := e.m.Delete("a-b", 1); err != nil {
		t.Fatal(err)
	}
	if e.m.Get("a-b", 1) != nil {
		t.Fatal("still open")
	}
	if _, err := e.fs.Stat("/data/a-b-1"); !os.IsNotExist(err) {
		t.Fatalf("dir still there: %v", err)
	}
	ents, _ := e.fs.ReadDir("/data")
	for _, en := range ents {
		if filepath.Ext(en.Name()) != "" && en.IsDir() && en.Name() != "x.y_z-3" {
			t.Fatalf("leftover %s", en.Name())
		}
	}
	e.restart()
	if len(e.m.Partitions()) != 2 {
		t.Fatalf("deleted partition came back: %v", e.m.Partitions())
	}
}

func TestReplaceSegmentsAndSwapRecovery(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1500
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 12; i++ {
		mustAppend(t, l, mkBatch(t, 2, 300, int64(i)))
	}
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// "Clean" the first two segments into one, keeping every other batch.
	w, err := l.NewSegmentWriter(segs[0].BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	keep := 0
	for _, s := range segs[:2] {
		i := 0
		if err := l.SegmentBatches(s.BaseOffset, func(b []byte) error {
			i++
			if i%2 == 0 {
				return nil
			}
			keep++
			return w.Append(b)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.ReplaceSegments([]int64{segs[0].BaseOffset, segs[1].BaseOffset}, []*SegmentWriter{w}); err != nil {
		t.Fatal(err)
	}
	if got := len(l.Segments()); got != len(segs)-1 {
		t.Fatalf("%d segments after replace, want %d", got, len(segs)-1)
	}
	hs := readAllMode(t, l, 0, false)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	e.crash(vfs.CrashOptions{})
	hs2 := readAllMode(t, e.log(), 0, false)
	if len(hs2) != len(hs) {
		t.Fatalf("after crash %d batches, before %d", len(hs2), len(hs))
	}

	// A crash mid-swap with only .swap files left completes the swap;
	// with a .cleaned file left, it is rolled back.
	l = e.log()
	segs = l.Segments()
	dir := l.Dir()
	mk := func(suffix string) {
		w, err := l.NewSegmentWriter(segs[1].BaseOffset)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		_ = l.SegmentBatches(segs[1].BaseOffset, func(b []byte) error {
			n++
			if n == 1 {
				return w.Append(b)
			}
			return nil
		})
		_ = w.s.idx.sync()
		_ = w.s.log.Sync()
		for _, p := range segmentPaths(w.s.prefix) {
			if suffix != cleanedSuffix {
				_ = e.fs.Rename(p+cleanedSuffix, p+suffix)
			}
		}
		_ = e.fs.SyncDir(dir)
	}
	mk(cleanedSuffix)
	before := len(readAllMode(t, l, 0, false))
	e.crash(vfs.CrashOptions{})
	if got := len(readAllMode(t, e.log(), 0, false)); got != before {
		t.Fatalf("rolled-back swap changed the log: %d vs %d", got, before)
	}
	l = e.log()
	segs = l.Segments()
	mk(swapSuffix)
	e.crash(vfs.CrashOptions{})
	if got := len(readAllMode(t, e.log(), 0, false)); got >= before {
		t.Fatalf("completed swap did not replace the segment: %d vs %d", got, before)
	}
}

func TestOSFS(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager(vfs.OS(), dir, ManagerOptions{Logger: quietLogger(), HousekeepingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Create("t", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		mustAppend(t, l, mkBatch(t, 3, 100, 1))
	}
	r, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	// The range's file is the descriptor cache's; pinned, it is the
	// *os.File the wire layer sendfiles from.
	p, ok := r.Ranges[0].File.(vfs.Pinner)
	if !ok {
		t.Fatal("OSFS range is not a pinnable cached file")
	}
	raw, err := p.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.(*os.File); !ok {
		t.Fatal("pinned OSFS range is not an *os.File")
	}
	p.Unpin()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cleanShutdownFile, recoveryPointFile, logStartFile, "t-0/00000000000000000000.log", "t-0/00000000000000000000.index", "t-0/00000000000000000000.timeindex"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	m, err = OpenManager(vfs.OS(), dir, ManagerOptions{Logger: quietLogger(), HousekeepingInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Get("t", 0).LogEndOffset(); got != 30 {
		t.Fatalf("leo %d", got)
	}
	readAll(t, m.Get("t", 0), 0)
}

// Deleting a partition removes its data from the directory at once, but
// ranges a fetch already holds stay readable until file.delete.delay.ms.
func TestDeletedPartitionRangesStayReadable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FileDeleteDelayMs = 10_000
	e := newEnv(t, cfg)
	l := e.log()
	want := mkBatch(t, 3, 100, e.clock.Now().UnixMilli())
	mustAppend(t, l, append([]byte(nil), want...))
	res, err := l.Read(0, 1<<20, true)
	if err != nil || len(res.Ranges) == 0 {
		t.Fatalf("read: %v %+v", err, res)
	}
	if err := e.m.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Stat(l.Dir()); err == nil {
		t.Fatal("partition directory still there after Delete")
	}
	r := res.Ranges[0]
	buf := make([]byte, r.Size)
	if _, err := r.File.ReadAt(buf, r.Pos); err != nil {
		t.Fatalf("range of the deleted partition unreadable before file.delete.delay.ms: %v", err)
	}
	e.clock.Advance(11 * time.Second)
	e.m.RunHousekeeping()
	if _, err := r.File.ReadAt(buf, r.Pos); err == nil {
		t.Fatal("files of the deleted partition still open after file.delete.delay.ms")
	}
}
