package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WriteFileAtomic on MemFS: a power loss at any point leaves the old content
// or the new one, never a mix, and never loses the old one before the rename
// is durable.
func TestWriteFileAtomicSurvivesCrashes(t *testing.T) {
	for _, failOp := range []string{"", "open", "write", "sync", "rename", "syncdir"} {
		t.Run("fail="+failOp, func(t *testing.T) {
			m := NewMemFS()
			if err := m.MkdirAll("/d", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(m, "/d/f", []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := NewFaulty(m)
			if failOp != "" {
				f.Add(Rule{Op: failOp, Err: syscall.EIO})
			}
			err := WriteFileAtomic(f, "/d/f", []byte("new content"), 0o644)
			if failOp == "" && err != nil {
				t.Fatal(err)
			}
			if failOp != "" && err == nil {
				t.Fatalf("no error with a failing %s", failOp)
			}
			if (failOp == "syncdir") != errors.Is(err, ErrNotDurable) {
				t.Fatalf("ErrNotDurable is %v for a failing %q: %v", errors.Is(err, ErrNotDurable), failOp, err)
			}
			live, _ := m.ReadFile("/d/f")
			wantLive := "old"
			if failOp == "" || failOp == "syncdir" {
				wantLive = "new content"
			}
			if string(live) != wantLive {
				t.Fatalf("live content %q, want %q", live, wantLive)
			}
			if _, err := m.Stat("/d/f" + TmpSuffix); failOp != "" && failOp != "syncdir" && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temporary file left behind after a failed %s: %v", failOp, err)
			}
			m.Crash(CrashOptions{})
			after, err := m.ReadFile("/d/f")
			if err != nil {
				t.Fatal(err)
			}
			wantDurable := "old"
			if failOp == "" {
				wantDurable = "new content"
			}
			if string(after) != wantDurable {
				t.Fatalf("after a crash %q, want %q", after, wantDurable)
			}
		})
	}
}

// A temporary file left by an earlier crash is removed and replaced, not
// written through (it may be a symlink or have other permissions).
func TestWriteFileAtomicReplacesLeftoverTemp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "f")
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(elsewhere, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, target+TmpSuffix); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(OS(), target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != "keep" {
		t.Fatalf("wrote through the leftover symlink: %q", b)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestFaultyNthAndTimes(t *testing.T) {
	m := NewMemFS()
	f := NewFaulty(m)
	r := f.Add(Rule{Op: "write", PathContains: "seg", Nth: 2, Times: 2})
	file, err := f.OpenFile("/seg", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.OpenFile("/other", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := 0; i < 5; i++ {
		_, err := file.Write([]byte("x"))
		got = append(got, err != nil)
		if _, err := other.Write([]byte("y")); err != nil {
			t.Fatalf("a write to another path failed: %v", err)
		}
	}
	want := []bool{false, true, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("write failures %v, want %v", got, want)
		}
	}
	if r.Fired() != 2 || f.Count("write") != 10 {
		t.Fatalf("fired %d, writes %d", r.Fired(), f.Count("write"))
	}
	once := f.Add(Rule{Op: "sync", Nth: 1})
	if err := file.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("first sync: %v, want EIO", err)
	}
	if err := file.Sync(); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	every := f.Add(Rule{Op: "syncdir"})
	for i := 0; i < 3; i++ {
		if err := f.SyncDir("/"); err == nil {
			t.Fatal("syncdir did not fail")
		}
	}
	if once.Fired() != 1 || every.Fired() != 3 {
		t.Fatalf("fired %d / %d", once.Fired(), every.Fired())
	}
	f.Clear()
	if err := f.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
}
