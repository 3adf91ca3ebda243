package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// allocated is the disk space a file holds, blocks past its end included.
func allocated(t *testing.T, path string) (size, alloc int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// requireReserve skips the test unless the filesystem of dir reserves
// blocks and counts them in a file's allocation.
func requireReserve(t *testing.T, dir string) {
	t.Helper()
	probe := filepath.Join(dir, "probe")
	f, err := vfs.OS().OpenFile(probe, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probe)
	err = vfs.Reserve(f, 0, 1<<20)
	f.Close()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the filesystem of %s does not reserve blocks: %v", dir, err)
	} else if err != nil {
		t.Fatal(err)
	}
	if _, alloc := allocated(t, probe); alloc < 1<<20 {
		t.Skipf("the filesystem of %s does not count reserved blocks (%d bytes after reserving 1 MiB)", dir, alloc)
	}
}

// reserveFile reserves n bytes past the end of the file at path, as a
// crash leaves a segment that had reserved ahead.
func reserveFile(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := vfs.OS().OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := vfs.Reserve(f, fi.Size(), n); err != nil {
		t.Fatal(err)
	}
	if size, alloc := allocated(t, path); alloc < size+n {
		t.Fatalf("reserving %d bytes past %s: size %d, allocated %d", n, path, size, alloc)
	}
}

// openLog opens a manager on fsys at dir (no housekeeping) and its
// partition t-0 with cfg; the manager is closed when the test ends.
func openLog(t *testing.T, fsys vfs.FS, dir string, cfg Config) (*Manager, *Log) {
	t.Helper()
	m, err := OpenManager(fsys, dir, ManagerOptions{Logger: quietLogger(), HousekeepingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	l, err := m.Open("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, l
}

// On a filesystem with fallocate, a segment that holds reserveFrom bytes
// reserves blocks ahead of its end, never past segment.bytes; a roll and a
// clean close give them back, and the files keep the sizes of what was
// written.
func TestReserveAheadGivenBack(t *testing.T) {
	dir := t.TempDir()
	requireReserve(t, dir)

	const segBytes = 3 << 20
	cfg := DefaultConfig()
	cfg.SegmentBytes = segBytes
	m, l := openLog(t, vfs.OS(), dir, cfg)
	seg0 := filepath.Join(dir, "t-0", "00000000000000000000.log")
	b := mkBatch(t, 16, 1000, 1) // about 16 KiB
	mustAppend(t, l, b)
	if size, alloc := allocated(t, seg0); alloc > size+4096 {
		t.Fatalf("a small segment reserved: size %d, allocated %d", size, alloc)
	}
	// Each reservation reaches twice the segment's end.
	doubled := 0
	for {
		mustAppend(t, l, b)
		size, alloc := allocated(t, seg0)
		if size >= reserveFrom && alloc < size {
			t.Fatalf("segment of %d bytes has %d allocated", size, alloc)
		}
		if size >= reserveFrom && alloc >= 2*size-4096 {
			doubled++
		}
		if size >= 512<<10 {
			break
		}
	}
	if doubled < 2 {
		t.Fatalf("%d reservations seen, want 2 or more", doubled)
	}
	// Up to segment.bytes and no further.
	for l.Segments()[0].Size < segBytes-int64(len(b)) {
		mustAppend(t, l, b)
		if _, alloc := allocated(t, seg0); alloc > segBytes+8192 {
			t.Fatalf("reserved past segment.bytes: %d allocated", alloc)
		}
	}
	mustAppend(t, l, b) // rolls by size
	// A roll gives back what lies past the end.
	seg1 := filepath.Join(dir, "t-0", fmt.Sprintf("%020d.log", l.Segments()[1].BaseOffset))
	for l.Segments()[1].Size < 1<<20 {
		mustAppend(t, l, b)
	}
	if size, alloc := allocated(t, seg1); alloc < size+256<<10 {
		t.Fatalf("active segment: size %d, allocated %d, want reserved ahead", size, alloc)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if size, alloc := allocated(t, seg1); alloc > size+8192 {
		t.Fatalf("rolled segment: size %d, allocated %d", size, alloc)
	}
	// So does a clean close.
	for l.Segments()[2].Size < 1<<20 {
		mustAppend(t, l, b)
	}
	seg2 := filepath.Join(dir, "t-0", fmt.Sprintf("%020d.log", l.Segments()[2].BaseOffset))
	if size, alloc := allocated(t, seg2); alloc < size+256<<10 {
		t.Fatalf("active segment: size %d, allocated %d, want reserved ahead", size, alloc)
	}
	size2 := l.Segments()[2].Size
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	size, alloc := allocated(t, seg2)
	if alloc > size+8192 {
		t.Fatalf("after close: size %d, allocated %d", size, alloc)
	}
	if size != size2 {
		t.Fatalf("after close: file of %d bytes, segment held %d", size, size2)
	}
}

// A reservation that fails costs nothing but itself: the append succeeds
// and is read back; a filesystem that cannot reserve is not asked again.
func TestReserveFailureKeepsAppending(t *testing.T) {
	faulty := vfs.NewFaulty(vfs.OS())
	rule := faulty.Add(vfs.Rule{Op: "reserve", Err: syscall.ENOSPC})
	m, l := openLog(t, faulty, t.TempDir(), DefaultConfig())
	b := mkBatch(t, 16, 1000, 1)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, b)
	}
	if rule.Fired() == 0 {
		t.Fatal("no reservation was tried")
	}
	if m.noReserve.Load() {
		t.Fatal("no space turned reservation off")
	}
	if got := readAll(t, l, 0); len(got) != 40 {
		t.Fatalf("%d batches read back, want 40", len(got))
	}

	m2, l2 := openLog(t, vfs.NewMemFS(), "/data", DefaultConfig()) // no fallocate
	for i := 0; i < 10; i++ {
		mustAppend(t, l2, b)
	}
	if !m2.noReserve.Load() {
		t.Fatal("a filesystem without fallocate is still asked")
	}
	if got := readAll(t, l2, 0); len(got) != 10 {
		t.Fatalf("%d batches read back, want 10", len(got))
	}
}

// A write that fails after a reservation cuts the segment back to where
// the write began, which gives the reservation back too; the log goes on.
func TestReserveGivenBackAfterFailedWrite(t *testing.T) {
	dir := t.TempDir()
	faulty := vfs.NewFaulty(vfs.OS())
	m, l := openLog(t, faulty, dir, DefaultConfig())
	b := mkBatch(t, 16, 1000, 1)
	seg := filepath.Join(dir, "t-0", "00000000000000000000.log")
	for l.Segments()[0].Size < 256<<10 {
		mustAppend(t, l, b)
	}
	if m.noReserve.Load() {
		t.Skip("the filesystem of the test directory does not reserve blocks")
	}
	before := l.Segments()[0].Size
	if size, alloc := allocated(t, seg); alloc < size+64<<10 {
		t.Skipf("no reservation seen (size %d, allocated %d)", size, alloc)
	}
	// Up to the last two batches' worth of the reservation; then a write
	// fails.
	for {
		size, alloc := allocated(t, seg)
		if alloc-size < 2*int64(len(b)) {
			break
		}
		mustAppend(t, l, b)
		before = l.Segments()[0].Size
	}
	faulty.Add(vfs.Rule{Op: "write", PathContains: ".log", Nth: 1})
	if _, err := l.Append(append([]byte(nil), b...), AppendOptions{}); err == nil {
		t.Fatal("append with a failing write succeeded")
	}
	faulty.Clear()
	if size, alloc := allocated(t, seg); size != before || alloc > size+8192 {
		t.Fatalf("after the failed write: size %d (want %d), allocated %d", size, before, alloc)
	}
	mustAppend(t, l, b)
	if got := readAll(t, l, 0); len(got) == 0 || l.Segments()[0].Size != before+int64(len(b)) {
		t.Fatalf("after the failed write: %d batches, segment size %d", len(got), l.Segments()[0].Size)
	}
}

// Blocks reserved before a crash are given back by the recovery of the
// active segment, whether it keeps its records (a truncate to its own
// size) or recovers empty (its size was lost: it may never roll).
func TestReserveGivenBackByRecovery(t *testing.T) {
	dir := t.TempDir()
	requireReserve(t, dir)
	m, l := openLog(t, vfs.OS(), dir, DefaultConfig())
	b := mkBatch(t, 16, 1000, 1)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, b)
	}
	seg0 := filepath.Join(dir, "t-0", "00000000000000000000.log")
	size0 := l.Segments()[0].Size
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	crash := func(path string) {
		t.Helper()
		reserveFile(t, path, 2<<20)
		if err := os.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil {
			t.Fatal(err)
		}
	}

	// An active segment with records.
	crash(seg0)
	m, l = openLog(t, vfs.OS(), dir, DefaultConfig())
	if got := readAll(t, l, 0); len(got) != 20 { // recovered on first use
		t.Fatalf("%d batches after recovery, want 20", len(got))
	}
	if size, alloc := allocated(t, seg0); size != size0 || alloc > size+8192 {
		t.Fatalf("recovered segment: size %d (want %d), allocated %d", size, size0, alloc)
	}

	// An active segment that recovers empty.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	seg1 := filepath.Join(dir, "t-0", fmt.Sprintf("%020d.log", l.Segments()[1].BaseOffset))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	crash(seg1)
	_, l = openLog(t, vfs.OS(), dir, DefaultConfig())
	if got := readAll(t, l, 0); len(got) != 20 {
		t.Fatalf("%d batches after the second recovery, want 20", len(got))
	}
	if size, alloc := allocated(t, seg1); size != 0 || alloc != 0 {
		t.Fatalf("empty recovered segment: size %d, allocated %d", size, alloc)
	}
}
