package log

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Benchmarks run on the real filesystem (vfs.OS()) under b.TempDir(), or
// $SLUICE_BENCH_DIR when set. Results and machine notes: docs/performance.md.

func benchDir(b *testing.B) string {
	if d := os.Getenv("SLUICE_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "logbench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func benchManager(b *testing.B, dir string) *Manager {
	m, err := OpenManager(vfs.OS(), dir, ManagerOptions{Logger: quietLogger(), HousekeepingInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// batch16K is a 16 KiB batch of 16 records with 1 KiB values.
func batch16K(b testing.TB) []byte {
	return mkBatch(b, 16, 1000, 1)
}

// BenchmarkAppend: 1 KiB records in 16 KiB batches, no forced flush.
func BenchmarkAppend(b *testing.B) {
	m := benchManager(b, benchDir(b))
	defer m.Close()
	l, err := m.Create("bench", 0, DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	raw := batch16K(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(raw, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendAsFollower: BenchmarkAppend's batches appended as a
// follower gets them from its leader (offsets and epoch already set).
func BenchmarkAppendAsFollower(b *testing.B) {
	m := benchManager(b, benchDir(b))
	defer m.Close()
	l, err := m.Create("bench", 0, DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	raw := batch16K(b)
	batch.SetPartitionLeaderEpoch(raw, 3)
	n := int64(binary.BigEndian.Uint32(raw[batch.OffLastOffsetDelta:])) + 1
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.SetBaseOffset(raw, int64(i)*n) // as the leader assigned it
		if _, err := l.AppendAsFollower(raw, FollowerAppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendFlushEach: flush.messages=1 with 8 concurrent appenders
// sharing fsyncs (group commit).
func BenchmarkAppendFlushEach(b *testing.B) {
	m := benchManager(b, benchDir(b))
	defer m.Close()
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l, err := m.Create("bench", 0, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch16K(b))))
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		raw := batch16K(b)
		for pb.Next() {
			if _, err := l.Append(raw, AppendOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReadPageCache: sequential 1 MiB reads of a 64 MiB log that is in
// the page cache, copying the ranges out (what a non-sendfile fetch does).
func BenchmarkReadPageCache(b *testing.B) {
	m := benchManager(b, benchDir(b))
	defer m.Close()
	l, err := m.Create("bench", 0, DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	raw := batch16K(b)
	for l.Size() < 64<<20 {
		if _, err := l.Append(raw, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 2<<20)
	b.SetBytes(1 << 20)
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		r, err := l.Read(off, 1<<20, true)
		if err != nil {
			b.Fatal(err)
		}
		n := int64(0)
		for _, fr := range r.Ranges {
			if _, err := fr.File.ReadAt(buf[n:n+fr.Size], fr.Pos); err != nil {
				b.Fatal(err)
			}
			n += fr.Size
		}
		if r.Size == 0 {
			b.Fatal("empty read")
		}
		last, _ := batch.ParseHeader(buf[n-int64(len(raw)):])
		off = last.LastOffset() + 1
		if off >= l.LogEndOffset() {
			off = 0
		}
	}
}

// BenchmarkRecoverUnflushedTail: open after a crash with an unflushed tail
// of $SLUICE_BENCH_RECOVERY_BYTES (default 256 MiB) in the page cache:
// every batch is re-validated (CRC) and the indexes are rebuilt.
func BenchmarkRecoverUnflushedTail(b *testing.B) {
	size := int64(256 << 20)
	if s := os.Getenv("SLUICE_BENCH_RECOVERY_BYTES"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		size = v
	}
	dir := benchDir(b)
	m := benchManager(b, dir)
	l, err := m.Create("bench", 0, DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	raw := batch16K(b)
	for l.Size() < size {
		if _, err := l.Append(raw, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	m.closeLogs() // a crash: no flush, no checkpoint, no marker
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_ = os.Remove(filepath.Join(dir, recoveryPointFile))
		_ = os.Remove(filepath.Join(dir, cleanShutdownFile))
		b.StartTimer()
		m := benchManager(b, dir)
		if got := m.Get("bench", 0).Size(); got < size {
			b.Fatalf("recovered %d bytes of %d", got, size)
		}
		b.StopTimer()
		m.closeLogs()
		b.StartTimer()
	}
}

// BenchmarkIdlePartitionMemory reports the Go heap held per open, idle
// partition holding a little data (page cache excluded).
func BenchmarkIdlePartitionMemory(b *testing.B) {
	const parts = 500
	for i := 0; i < b.N; i++ {
		dir := benchDir(b)
		m := benchManager(b, dir)
		raw := batch16K(b)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for p := int32(0); p < parts; p++ {
			l, err := m.Create("idle", p, DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			for j := 0; j < 8; j++ {
				if _, err := l.Append(raw, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		m.RunHousekeeping()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/parts, "heapB/partition")
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
