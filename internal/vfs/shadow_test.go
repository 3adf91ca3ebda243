package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestShadowKeepsWhatWasSynced: the copy holds what existed at the start,
// each file's data up to its last sync, and directory operations at once;
// replacing the root with it loses exactly the writes not synced.
func TestShadowKeepsWhatWasSynced(t *testing.T) {
	base := t.TempDir()
	root, dir := filepath.Join(base, "data"), filepath.Join(base, "shadow")
	if err := os.MkdirAll(filepath.Join(root, "p-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "p-0", "old.log"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := NewShadow(OS(), root, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewShadow(OS(), root, filepath.Join(root, "x")); err == nil {
		t.Fatal("a shadow directory inside the root was accepted")
	}
	copyOf := func(rel string) string { return filepath.Join(ShadowPath(dir, root), rel) }
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}

	// A synced write is in the copy; a later unsynced one is not.
	f, err := s.OpenFile(filepath.Join(root, "p-0", "a.log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if got := read(copyOf("p-0/a.log")); got != "" {
		t.Fatalf("unsynced write in the copy: %q", got)
	}
	if err := Datasync(f); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(" world"), 5); err != nil {
		t.Fatal(err)
	}
	if got := read(copyOf("p-0/a.log")); got != "hello" {
		t.Fatalf("copy after sync then write: %q, want hello", got)
	}
	// An in-place overwrite below the synced end, then a truncation, synced.
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := read(copyOf("p-0/a.log")); got != "Jello wo" {
		t.Fatalf("copy after overwrite, truncate, sync: %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// WriteFileAtomic (sync, rename) is in the copy under its final name.
	if err := WriteFileAtomic(s, filepath.Join(root, "checkpoint"), []byte("7"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(copyOf("checkpoint")); got != "7" {
		t.Fatalf("atomic write: copy %q", got)
	}
	if _, err := os.Stat(copyOf("checkpoint" + TmpSuffix)); !os.IsNotExist(err) {
		t.Fatalf("temporary file left in the copy: %v", err)
	}
	// A directory renamed with an unsynced file in it: the file's pending
	// writes follow it and a sync after the rename lands in the copy.
	g, err := s.OpenFile(filepath.Join(root, "p-0", "b.log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt([]byte("bee"), 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(filepath.Join(root, "p-0"), filepath.Join(root, "p-0.deleted")); err != nil {
		t.Fatal(err)
	}
	if got := read(copyOf("p-0.deleted/b.log")); got != "" {
		t.Fatalf("renamed unsynced file: copy %q", got)
	}
	g, err = s.OpenFile(filepath.Join(root, "p-0.deleted", "b.log"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = g.Close()
	if got := read(copyOf("p-0.deleted/b.log")); got != "bee" {
		t.Fatalf("renamed file synced: copy %q", got)
	}
	if got := read(copyOf("p-0.deleted/old.log")); got != "before" {
		t.Fatalf("file from before the start: copy %q", got)
	}
	if err := s.Remove(filepath.Join(root, "p-0.deleted", "old.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(copyOf("p-0.deleted/old.log")); !os.IsNotExist(err) {
		t.Fatalf("removed file still in the copy: %v", err)
	}
	// Files outside the root are not copied.
	h, err := s.OpenFile(filepath.Join(base, "outside"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Sync()
	_ = h.Close()
	if _, err := os.Stat(ShadowPath(dir, filepath.Join(base, "outside"))); !os.IsNotExist(err) {
		t.Fatalf("file outside the root copied: %v", err)
	}
	// A new shadow starts from the root as it is.
	if _, err := NewShadow(OS(), root, dir); err != nil {
		t.Fatal(err)
	}
	if got := read(copyOf("p-0.deleted/a.log")); got != "Jello wo" {
		t.Fatalf("restarted shadow: copy %q", got)
	}
}

// newTestShadow is a Shadow of an empty root under a temporary directory,
// with its copy beside it.
func newTestShadow(t *testing.T) (s *Shadow, root, dir string) {
	t.Helper()
	base := t.TempDir()
	root, dir = filepath.Join(base, "data"), filepath.Join(base, "shadow")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := NewShadow(OS(), root, dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, root, dir
}

// TestShadowRenameWhileOpen: a handle follows its file through a rename (a
// sync after it lands in the copy under the new name), and a handle on a
// file replaced by a rename or removed syncs nothing into the copy.
func TestShadowRenameWhileOpen(t *testing.T) {
	s, root, dir := newTestShadow(t)
	copyOf := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(ShadowPath(dir, root), rel))
		if err != nil {
			return "<missing>"
		}
		return string(b)
	}
	open := func(name string) File {
		f, err := s.OpenFile(filepath.Join(root, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	a := open("seg.cleaned")
	if _, err := a.WriteAt([]byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(filepath.Join(root, "seg.cleaned"), filepath.Join(root, "seg.log")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := copyOf("seg.log"); got != "kept" {
		t.Fatalf("synced after its rename: copy %q, want kept", got)
	}
	if got := copyOf("seg.cleaned"); got != "<missing>" {
		t.Fatalf("old name in the copy: %q", got)
	}
	// The old wal is replaced by a rename; a late sync of its handle must
	// not overwrite the new file's copy.
	old := open("wal")
	if _, err := old.WriteAt([]byte("old-old-old"), 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(s, filepath.Join(root, "wal"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := old.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := copyOf("wal"); got != "new" {
		t.Fatalf("replaced file's copy: %q, want new", got)
	}
	gone := open("gone")
	if _, err := gone.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := gone.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := copyOf("gone"); got != "<missing>" {
		t.Fatalf("removed file synced back into the copy: %q", got)
	}
}

// Blocks reserved through the shadow leave the file and its copy as they
// were: the same size, and after a sync the same content.
func TestShadowReservePassesThrough(t *testing.T) {
	s, root, dir := newTestShadow(t)
	f, err := s.OpenFile(filepath.Join(root, "a.log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	err = Reserve(f, 0, 1<<20)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no reservation on the filesystem of %s: %v", root, err)
	} else if err != nil {
		t.Fatal(err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 5 {
		t.Fatalf("after reserving: %v, %v; want a 5-byte file", fi, err)
	}
	if err := Datasync(f); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ShadowPath(dir, root), "a.log")); err != nil || string(b) != "hello" {
		t.Fatalf("the copy after a sync: %q, %v", b, err)
	}
}
