package vfs

import (
	"os"
	"testing"
)

// CrashImage leaves the live MemFS as it is and holds what a crash would.
func TestMemFSCrashImage(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/a", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("synced")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("+lost")); err != nil {
		t.Fatal(err)
	}
	if g, err := m.OpenFile("/d/unsynced-entry", os.O_CREATE|os.O_RDWR, 0o644); err != nil {
		t.Fatal(err)
	} else {
		g.Close()
	}
	img := m.CrashImage()
	if got, err := img.ReadFile("/d/a"); err != nil || string(got) != "synced" {
		t.Fatalf("image of /d/a: %q %v", got, err)
	}
	if _, err := img.Stat("/d/unsynced-entry"); err == nil {
		t.Fatal("an entry whose directory was never synced is in the image")
	}
	if got, err := m.ReadFile("/d/a"); err != nil || string(got) != "synced+lost" {
		t.Fatalf("live /d/a after CrashImage: %q %v", got, err)
	}
	if _, err := f.Write([]byte("!")); err != nil {
		t.Fatalf("the live file's handle died: %v", err)
	}
}
