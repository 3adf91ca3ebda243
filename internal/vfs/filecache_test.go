package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

func openCached(t *testing.T, c *FileCache, fsys FS, name string) *CachedFile {
	t.Helper()
	f, err := c.Open(fsys, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFileCacheEvictsAndReopens(t *testing.T) {
	fsys := NewMemFS()
	c := NewFileCache(2)
	var files []*CachedFile
	for i := 0; i < 5; i++ {
		f := openCached(t, c, fsys, fmt.Sprintf("/f%d", i))
		if _, err := f.Write([]byte(fmt.Sprintf("file %d;", i))); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if n := c.Stats().Open; n > 2 {
			t.Fatalf("%d descriptors open, capacity 2", n)
		}
	}
	// Writes continue at the position kept across reopens.
	for i, f := range files {
		if _, err := f.Write([]byte("more")); err != nil {
			t.Fatal(err)
		}
		got, err := fsys.ReadFile(fmt.Sprintf("/f%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("file %d;more", i); string(got) != want {
			t.Fatalf("f%d = %q, want %q", i, got, want)
		}
	}
	st := c.Stats()
	if st.Open > 2 || st.Peak > 2 || st.Evictions == 0 || st.Opens <= 5 {
		t.Fatalf("stats %+v: want at most 2 open, evictions and reopens", st)
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Stats().Open; n != 0 {
		t.Fatalf("%d descriptors open after closing every file", n)
	}
	if _, err := files[0].ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after Close: %v, want os.ErrClosed", err)
	}
}

// A pinned descriptor is never closed: not by eviction, not by Close. The
// cache goes over its capacity while everything is pinned and gives the
// excess back on Unpin.
func TestFileCachePinnedNeverClosed(t *testing.T) {
	fsys := NewMemFS()
	c := NewFileCache(2)
	a := openCached(t, c, fsys, "/a")
	if _, err := a.WriteAt([]byte("pinned data"), 0); err != nil {
		t.Fatal(err)
	}
	raw, err := a.Pin()
	if err != nil {
		t.Fatal(err)
	}
	b := openCached(t, c, fsys, "/b")
	if _, err := b.WriteAt([]byte("b"), 0); err != nil {
		t.Fatal(err)
	}
	rawB, err := b.Pin()
	if err != nil {
		t.Fatal(err)
	}
	// Both descriptors are pinned: more files push the cache over capacity
	// rather than close a pinned one.
	var others []*CachedFile
	for i := 0; i < 4; i++ {
		f := openCached(t, c, fsys, fmt.Sprintf("/o%d", i))
		if _, err := f.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		others = append(others, f)
	}
	buf := make([]byte, 11)
	if _, err := raw.ReadAt(buf, 0); err != nil || string(buf) != "pinned data" {
		t.Fatalf("pinned descriptor read %q, %v", buf, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ReadAt(buf, 0); err != nil {
		t.Fatalf("Close closed a pinned descriptor: %v", err)
	}
	if !a.IsOpen() {
		t.Fatal("a pinned file was closed")
	}
	// The other files went over capacity while used and gave their
	// descriptors back as soon as they were unpinned.
	if st := c.Stats(); st.Peak != 3 || st.Open != 2 {
		t.Fatalf("stats %+v: want a peak of 3 (over capacity while both are pinned) and 2 open", st)
	}
	a.Unpin()
	if a.IsOpen() {
		t.Fatal("a closed file kept its descriptor after its last Unpin")
	}
	if _, err := raw.ReadAt(buf, 0); err == nil {
		t.Fatal("descriptor still usable after Close and Unpin")
	}
	if _, err := rawB.ReadAt(buf[:1], 0); err != nil {
		t.Fatal(err)
	}
	b.Unpin()
	if n := c.Stats().Open; n > 2 {
		t.Fatalf("%d descriptors open after every pin was released, capacity 2", n)
	}
	for _, f := range others {
		if _, err := f.ReadAt(buf[:1], 0); err != nil || buf[0] != 'x' {
			t.Fatalf("reopened read %q, %v", buf[:1], err)
		}
	}
}

func TestFileCacheRenameWhileEvicted(t *testing.T) {
	fsys := NewMemFS()
	c := NewFileCache(1)
	a := openCached(t, c, fsys, "/a")
	if _, err := a.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	openCached(t, c, fsys, "/b") // evicts a
	if a.IsOpen() {
		t.Fatal("a still open in a cache of one")
	}
	if err := a.Rename("/a.deleted"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
		t.Fatalf("read after rename %q, %v", buf, err)
	}
	if a.Name() != "/a.deleted" {
		t.Fatalf("name %q", a.Name())
	}
}

// Many goroutines read and write many files through a small cache: the
// number of descriptors never exceeds the capacity (every goroutine pins at
// most one file at a time, far fewer than the capacity) and every byte
// read back is the byte written.
func TestFileCacheBoundUnderConcurrency(t *testing.T) {
	for _, osfs := range []bool{false, true} {
		t.Run(fmt.Sprintf("os=%v", osfs), func(t *testing.T) {
			var fsys FS = NewMemFS()
			dir := "/"
			if osfs {
				fsys, dir = OS(), t.TempDir()+"/"
			}
			const capacity, nfiles, workers, rounds = 16, 200, 6, 300
			c := NewFileCache(capacity)
			files := make([]*CachedFile, nfiles)
			for i := range files {
				files[i] = openCached(t, c, fsys, fmt.Sprintf("%sf%03d", dir, i))
			}
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						f := files[(w*7919+r*31)%nfiles]
						rec := []byte(fmt.Sprintf("%02d%04d", w, r))
						off := int64(w*rounds+r) * int64(len(rec))
						if _, err := f.WriteAt(rec, off); err != nil {
							errs <- err
							return
						}
						got := make([]byte, len(rec))
						if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, rec) {
							errs <- fmt.Errorf("read %q, %v; want %q", got, err, rec)
							return
						}
						if r%10 == 0 {
							raw, err := f.Pin()
							if err != nil {
								errs <- err
								return
							}
							if _, err := raw.ReadAt(got, off); err != nil {
								errs <- err
							}
							f.Unpin()
						}
						if n := c.Stats().Open; n > capacity {
							errs <- fmt.Errorf("%d descriptors open, capacity %d", n, capacity)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			st := c.Stats()
			if st.Peak > capacity || st.Evictions == 0 {
				t.Fatalf("stats %+v: want peak <= %d and evictions", st, capacity)
			}
			for _, f := range files {
				_ = f.Close()
			}
			if st := c.Stats(); st.Open != 0 {
				t.Fatalf("stats %+v after closing everything", st)
			}
		})
	}
}

func TestFileCacheCapacityFor(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{{0, 4096}, {100, 64}, {1024, 768}, {20000, 15000}, {1 << 40, 1<<20 - 1<<18}} {
		if got := fileCacheCapacityFor(c.limit); got != c.want {
			t.Errorf("fileCacheCapacityFor(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// OpenLazy opens nothing; Stat of a file without a descriptor asks the FS
// by name; the first read opens it.
func TestFileCacheOpenLazy(t *testing.T) {
	fsys := NewMemFS()
	if err := fsys.WriteFile("/lazy", []byte("content")); err != nil {
		t.Fatal(err)
	}
	c := NewFileCache(4)
	f := c.OpenLazy(fsys, "/lazy", os.O_RDWR|os.O_CREATE, 0o644)
	fi, err := f.Stat()
	if err != nil || fi.Size() != 7 {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	if f.IsOpen() || c.Stats().Opens != 0 {
		t.Fatalf("Stat opened the file: %+v", c.Stats())
	}
	buf := make([]byte, 7)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "content" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	if !f.IsOpen() || c.Stats().Open != 1 {
		t.Fatalf("ReadAt did not open the file: %+v", c.Stats())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Stat after Close: %v, want os.ErrClosed", err)
	}
}
