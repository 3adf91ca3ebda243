package node

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDiskFull mounts a small tmpfs as a node's data directory, fills it,
// checks that a write then fails with ENOSPC, frees it, and unmounts it
// with its content saved into a plain directory.
func TestDiskFull(t *testing.T) {
	if err := TmpfsAvailable(); err != nil {
		t.Skipf("tmpfs cannot be mounted here: %v", err)
	}
	dir := t.TempDir()
	n := &Node{Config: Config{ID: 1, Dir: dir}}
	if err := os.MkdirAll(n.DataDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := n.MountDataTmpfs("4m"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = UnmountAll() }()
	if err := os.WriteFile(filepath.Join(n.DataDir(), "kept"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Fill(); err != nil {
		t.Fatal(err)
	}
	if !n.Full() {
		t.Fatal("Full() is false after Fill")
	}
	err := os.WriteFile(filepath.Join(n.DataDir(), "more"), make([]byte, 64<<10), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write to the full data directory: %v, want ENOSPC", err)
	}
	if err := n.Unfill(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.DataDir(), "more"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatalf("a write after the heal: %v", err)
	}
	if err := UnmountAll(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(n.DataDir(), "kept")); err != nil || string(b) != "data" {
		t.Fatalf("content after unmounting: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(n.DataDir(), FillerName)); err == nil {
		t.Fatal("the filler survived")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.DataDir(), &st); err != nil || st.Type == 0x01021994 { // TMPFS_MAGIC
		t.Fatalf("still a tmpfs after UnmountAll (%v)", err)
	}
}
