package producer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := NewState()
	var leo int64
	for i := int32(0); i < 7; i++ {
		appendTo(t, s, hdr(1, 3, i*2, 2), &leo)
	}
	appendTo(t, s, hdr(9, 0, 100, 4), &leo)
	if err := s.WriteSnapshot(vfs.OS(), dir, leo); err != nil {
		t.Fatal(err)
	}
	// The file has Kafka's size: 10-byte header + 46 bytes per producer.
	fi, err := os.Stat(filepath.Join(dir, SnapshotName(leo)))
	if err != nil || fi.Size() != snapshotHeader+2*snapshotEntrySize {
		t.Fatalf("snapshot file: %v %v", fi, err)
	}
	r := NewState()
	from, err := r.LoadSnapshot(vfs.OS(), dir, 0, leo, 0, 0)
	if err != nil || from != leo {
		t.Fatalf("load: from=%d err=%v", from, err)
	}
	got, want := r.Producers(), s.Producers()
	sortInfo := func(p []ProducerInfo) {
		slices.SortFunc(p, func(a, b ProducerInfo) int { return int(a.ProducerID - b.ProducerID) })
	}
	sortInfo(got)
	sortInfo(want)
	if !slices.Equal(got, want) {
		t.Fatalf("reloaded %+v, want %+v", got, want)
	}
	// The last batch is still a duplicate; the next sequence follows.
	if d, err := r.Check(hdr(1, 3, 12, 2)); err != nil || !d.Found || d.BaseOffset != 12 {
		t.Fatalf("last batch after reload: %+v %v", d, err)
	}
	if _, err := r.Check(hdr(1, 3, 14, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Check(hdr(1, 2, 14, 1)); code(err) != CodeInvalidProducerEpoch {
		t.Fatalf("stale epoch after reload: %v", err)
	}
}

func TestSnapshotSelectionAndCorruption(t *testing.T) {
	dir := t.TempDir()
	s := NewState()
	var leo int64
	appendTo(t, s, hdr(1, 0, 0, 1), &leo)
	if err := s.WriteSnapshot(vfs.OS(), dir, 1); err != nil {
		t.Fatal(err)
	}
	appendTo(t, s, hdr(1, 0, 1, 1), &leo)
	if err := s.WriteSnapshot(vfs.OS(), dir, 2); err != nil {
		t.Fatal(err)
	}
	appendTo(t, s, hdr(1, 0, 2, 1), &leo)
	if err := s.WriteSnapshot(vfs.OS(), dir, 3); err != nil {
		t.Fatal(err)
	}
	// Only the newest snapshotsKept remain.
	offs, _ := listSnapshots(vfs.OS(), dir)
	if !slices.Equal(offs, []int64{2, 3}) {
		t.Fatalf("kept %v", offs)
	}
	// Log truncated to 2: snapshot 3 is deleted, 2 is used.
	r := NewState()
	from, err := r.LoadSnapshot(vfs.OS(), dir, 0, 2, 0, 0)
	if err != nil || from != 2 {
		t.Fatalf("from=%d err=%v", from, err)
	}
	if _, err := os.Stat(filepath.Join(dir, SnapshotName(3))); !os.IsNotExist(err) {
		t.Fatalf("snapshot beyond the log end kept: %v", err)
	}
	// Corrupt the remaining one: it is dropped and replay starts at log start.
	p := filepath.Join(dir, SnapshotName(2))
	data, _ := os.ReadFile(p)
	data[len(data)-1] ^= 0xff
	os.WriteFile(p, data, 0o644)
	from, err = r.LoadSnapshot(vfs.OS(), dir, 0, 2, 0, 0)
	if err != nil || from != 0 || r.Len() != 0 {
		t.Fatalf("corrupt: from=%d err=%v len=%d", from, err, r.Len())
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("corrupt snapshot kept")
	}
	// Garbage of every length never panics.
	for n := 0; n < 80; n++ {
		if _, err := decodeSnapshot(make([]byte, n)); err == nil && n != snapshotHeader {
			t.Fatalf("%d zero bytes decoded", n)
		}
	}
}

func TestSnapshotExpiresOldProducers(t *testing.T) {
	dir := t.TempDir()
	s := NewState()
	var leo int64
	appendTo(t, s, hdr(1, 0, 0, 1), &leo)   // timestamp 1000
	appendTo(t, s, hdr(2, 0, 500, 1), &leo) // timestamp 1500
	s.WriteSnapshot(vfs.OS(), dir, leo)
	r := NewState()
	if _, err := r.LoadSnapshot(vfs.OS(), dir, 0, leo, 1400, 400); err != nil {
		t.Fatal(err)
	}
	if p := r.Producers(); len(p) != 1 || p[0].ProducerID != 2 {
		t.Fatalf("loaded %+v", p)
	}
}

func TestIDsNeverReused(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenIDs(vfs.OS(), dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i := 0; i < 25; i++ {
		id, err := a.Next()
		if err != nil || seen[id] {
			t.Fatalf("id %d err %v (dup=%v)", id, err, seen[id])
		}
		seen[id] = true
	}
	// "Restart": the rest of the reserved block is skipped.
	b, err := OpenIDs(vfs.OS(), dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	id, err := b.Next()
	if err != nil || seen[id] || id != 30 {
		t.Fatalf("after restart got %d (%v)", id, err)
	}
	// A damaged file is an error, not a reset.
	os.WriteFile(filepath.Join(dir, IDFileName), []byte("1\nbanana\n"), 0o644)
	if _, err := OpenIDs(vfs.OS(), dir, 10); err == nil {
		t.Fatal("garbage id file accepted")
	}
}

func TestSnapshotIfChanged(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.OS()
	s := NewState()
	if ok, err := s.SnapshotIfChanged(fsys, dir); ok || err != nil {
		t.Fatalf("empty state snapshotted: %v %v", ok, err)
	}
	leo := int64(10)                      // non-producer batches before
	appendTo(t, s, hdr(3, 0, 0, 4), &leo) // 10..13
	leo += 6                              // more non-producer data: 14..19
	if ok, err := s.SnapshotIfChanged(fsys, dir); !ok || err != nil {
		t.Fatalf("changed state not snapshotted: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, SnapshotName(14))); err != nil {
		t.Fatalf("snapshot not named for the state's end offset: %v", err)
	}
	if ok, _ := s.SnapshotIfChanged(fsys, dir); ok {
		t.Fatal("unchanged state snapshotted again")
	}
	// A shutdown snapshot at an offset the state has not reached is refused.
	if err := s.WriteSnapshot(fsys, dir, 12); err == nil {
		t.Fatal("snapshot below the state's end accepted")
	}
	r := NewState()
	if from, err := r.LoadSnapshot(fsys, dir, 0, leo, 0, 0); err != nil || from != 14 {
		t.Fatalf("load: %d %v", from, err)
	}
	if d, _ := r.Check(hdr(3, 0, 0, 4)); !d.Found || d.BaseOffset != 10 {
		t.Fatalf("reloaded duplicate: %+v", d)
	}
}
