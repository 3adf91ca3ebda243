package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

func TestDatasyncOSFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "00000000000000000000.log")
	f, err := vfs.OS().OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("batch bytes"), 0); err != nil {
		t.Fatal(err)
	}
	if err := vfs.Datasync(f); err != nil {
		t.Fatalf("datasync: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := vfs.Datasync(f); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("datasync of a closed file: %v, want os.ErrClosed", err)
	}
}

// A MemFS file has no Datasync: datasync falls back to Sync, so the data
// survives a simulated power loss.
func TestDatasyncMemFSSurvivesCrash(t *testing.T) {
	fs := vfs.NewMemFS()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenFile("/d/a.log", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("durable"), 0); err != nil {
		t.Fatal(err)
	}
	if err := vfs.Datasync(f); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(" lost"), 7); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{})
	got, err := fs.ReadFile("/d/a.log")
	if err != nil || !bytes.Equal(got, []byte("durable")) {
		t.Fatalf("after crash: %q, %v", got, err)
	}
}
