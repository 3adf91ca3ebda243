package vfs

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// FileCache bounds the number of file descriptors a set of long-lived files
// holds. A file opened through it (Open) is a *CachedFile: it looks like
// any File, but its descriptor is opened on demand and closed when the cache
// needs room and nobody uses it, then opened again by the next use. This is
// what lets a broker keep far more partitions than its descriptor limit
// allows open files: an idle partition holds no descriptor.
//
// Every operation of a CachedFile pins the descriptor for its duration; Pin
// and Unpin let a caller hold it longer (a sendfile from the raw *os.File).
// A pinned descriptor is never closed, by eviction or by Close. If every
// open descriptor is pinned when one more is needed, the cache opens it
// anyway (it never fails or blocks an operation for want of room) and gives
// the excess back as soon as pins are released; Stats reports the peak.
//
// Eviction is the clock algorithm: a use sets a bit, the sweeping hand
// clears it and closes the first unpinned file whose bit is clear, so a use
// costs two atomic operations and never takes the cache's lock.
type FileCache struct {
	capacity int

	mu   sync.Mutex
	ring []*CachedFile // files with an open descriptor (mu)
	hand int           // (mu)

	open      atomic.Int64 // descriptors held
	peak      atomic.Int64
	opens     atomic.Int64
	evictions atomic.Int64
}

// FileCacheStats describes a FileCache.
type FileCacheStats struct {
	Capacity  int   // the bound on descriptors (exceeded only while all are pinned)
	Open      int64 // descriptors held now
	Peak      int64 // the most held at once
	Opens     int64 // descriptors opened (first opens and reopens)
	Evictions int64 // descriptors closed to make room
}

// NewFileCache returns a cache holding at most capacity descriptors
// (minimum 1).
func NewFileCache(capacity int) *FileCache {
	return &FileCache{capacity: max(capacity, 1)}
}

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	return FileCacheStats{
		Capacity:  c.capacity,
		Open:      c.open.Load(),
		Peak:      c.peak.Load(),
		Opens:     c.opens.Load(),
		Evictions: c.evictions.Load(),
	}
}

// Capacity is the bound on descriptors.
func (c *FileCache) Capacity() int { return c.capacity }

// Open opens name in fsys with flag and perm (creating or truncating it as
// flag says) and returns it as a cached file, unpinned. Reopens after an
// eviction use flag without O_CREATE, O_EXCL and O_TRUNC. The file's
// position (Write) is kept by the CachedFile across reopens; O_APPEND is
// not supported.
func (c *FileCache) Open(fsys FS, name string, flag int, perm os.FileMode) (*CachedFile, error) {
	f := &CachedFile{c: c, fsys: fsys, flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND), perm: perm, slot: -1}
	f.name.Store(&name)
	f.refs.Store(-1)
	f.mu.Lock()
	err := f.openLocked(flag &^ os.O_APPEND)
	if err == nil {
		f.refs.Store(0)
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if c.open.Load() > int64(c.capacity) {
		c.shrink() // opened over capacity while every other was pinned
	}
	return f, nil
}

// OpenLazy returns name in fsys as a cached file without opening it: the
// first use opens it with flag (less O_CREATE, O_EXCL, O_TRUNC), and Stat
// of a file without a descriptor asks fsys by name. The file must exist.
// Loading many idle partitions this way costs no descriptor and no open.
func (c *FileCache) OpenLazy(fsys FS, name string, flag int, perm os.FileMode) *CachedFile {
	f := &CachedFile{c: c, fsys: fsys, flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND), perm: perm, slot: -1}
	f.name.Store(&name)
	f.refs.Store(-1)
	return f
}

// reserve makes room for one more descriptor and enters f in the ring
// (f.mu held, f not in the ring).
func (c *FileCache) reserve(f *CachedFile) {
	c.mu.Lock()
	for c.open.Load() >= int64(c.capacity) && c.evictOneLocked() {
	}
	n := c.open.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	f.slot = len(c.ring)
	c.ring = append(c.ring, f)
	c.mu.Unlock()
}

// removeLocked takes f out of the ring and the count (c.mu held).
func (c *FileCache) removeLocked(f *CachedFile) {
	if f.slot < 0 {
		return
	}
	last := len(c.ring) - 1
	c.ring[f.slot] = c.ring[last]
	c.ring[f.slot].slot = f.slot
	c.ring[last] = nil
	c.ring = c.ring[:last]
	f.slot = -1
	c.open.Add(-1)
}

// evictOneLocked closes one unpinned descriptor, the first the clock hand
// finds not used since its last pass; false if every one is pinned or busy.
func (c *FileCache) evictOneLocked() bool {
	for steps := 2*len(c.ring) + 1; steps > 0 && len(c.ring) > 0; steps-- {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		v := c.ring[c.hand]
		if v.used.Load() {
			v.used.Store(false)
			c.hand++
			continue
		}
		if v.mu.TryLock() {
			ok := v.closeIdleLocked()
			v.mu.Unlock()
			if ok {
				c.evictions.Add(1)
				return true // the hand now points at the file moved into v's slot
			}
		}
		c.hand++
	}
	return false
}

// shrink gives back descriptors opened beyond the capacity while all were
// pinned.
func (c *FileCache) shrink() {
	c.mu.Lock()
	for c.open.Load() > int64(c.capacity) && c.evictOneLocked() {
	}
	c.mu.Unlock()
}

// CachedFile is a File whose descriptor a FileCache opens and closes as
// needed (see FileCache). All methods are safe for concurrent use.
type CachedFile struct {
	c    *FileCache
	fsys FS
	flag int // for reopening
	perm os.FileMode
	name atomic.Pointer[string]
	off  atomic.Int64 // position for Write

	// refs is -1 while no descriptor is open, else the number of pins.
	refs   atomic.Int32
	used   atomic.Bool // pinned since the clock hand last passed
	closed atomic.Bool // Close was called: no reopening

	mu   sync.Mutex // opening and closing the descriptor; Rename
	f    File       // the descriptor, valid while refs >= 0
	slot int        // index in c.ring, -1 if none (c.mu)
}

var _ File = (*CachedFile)(nil)

// openLocked opens the descriptor (f.mu held, refs == -1).
func (f *CachedFile) openLocked(flag int) error {
	f.c.reserve(f)
	raw, err := f.fsys.OpenFile(*f.name.Load(), flag, f.perm)
	if err != nil {
		f.c.mu.Lock()
		f.c.removeLocked(f)
		f.c.mu.Unlock()
		return err
	}
	f.c.opens.Add(1)
	f.f = raw
	f.used.Store(true)
	return nil
}

// closeIdleLocked closes the descriptor if it is open and unpinned (f.mu
// and c.mu held).
func (f *CachedFile) closeIdleLocked() bool {
	if !f.refs.CompareAndSwap(0, -1) {
		return false
	}
	_ = f.f.Close()
	f.f = nil
	f.c.removeLocked(f)
	return true
}

// Pin returns the open descriptor, opening it if needed, and keeps it open
// until the matching Unpin. With OS() it is an *os.File.
func (f *CachedFile) Pin() (File, error) {
	for {
		r := f.refs.Load()
		if r < 0 {
			return f.pinSlow()
		}
		if f.refs.CompareAndSwap(r, r+1) {
			if !f.used.Load() {
				f.used.Store(true)
			}
			return f.f, nil
		}
	}
}

func (f *CachedFile) pinSlow() (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		r := f.refs.Load()
		if r < 0 {
			break
		}
		if f.refs.CompareAndSwap(r, r+1) {
			f.used.Store(true)
			return f.f, nil
		}
	}
	if f.closed.Load() {
		return nil, &os.PathError{Op: "open", Path: f.Name(), Err: os.ErrClosed}
	}
	if err := f.openLocked(f.flag); err != nil {
		return nil, err
	}
	f.refs.Store(1)
	return f.f, nil
}

// Unpin releases a Pin.
func (f *CachedFile) Unpin() {
	if f.refs.Add(-1) != 0 {
		return
	}
	if f.closed.Load() {
		f.mu.Lock()
		f.c.mu.Lock()
		f.closeIdleLocked()
		f.c.mu.Unlock()
		f.mu.Unlock()
		return
	}
	if f.c.open.Load() > int64(f.c.capacity) {
		f.c.shrink()
	}
}

// IsOpen reports whether the file holds a descriptor now.
func (f *CachedFile) IsOpen() bool { return f.refs.Load() >= 0 }

// Name is the file's current name.
func (f *CachedFile) Name() string { return *f.name.Load() }

// Rename renames the file to newpath in its FS; later reopens use the new
// name. An open descriptor stays valid.
func (f *CachedFile) Rename(newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fsys.Rename(f.Name(), newpath); err != nil {
		return err
	}
	f.name.Store(&newpath)
	return nil
}

// Close closes the descriptor once no pin holds it; the file cannot be used
// afterwards (an operation fails with os.ErrClosed, except that one
// overlapping a pin still works).
func (f *CachedFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Swap(true) {
		return &os.PathError{Op: "close", Path: f.Name(), Err: os.ErrClosed}
	}
	f.c.mu.Lock()
	f.closeIdleLocked()
	f.c.mu.Unlock()
	return nil
}

// ReadAt implements File.
func (f *CachedFile) ReadAt(b []byte, off int64) (int, error) {
	raw, err := f.Pin()
	if err != nil {
		return 0, err
	}
	n, err := raw.ReadAt(b, off)
	f.Unpin()
	return n, err
}

// WriteAt implements File.
func (f *CachedFile) WriteAt(b []byte, off int64) (int, error) {
	raw, err := f.Pin()
	if err != nil {
		return 0, err
	}
	n, err := raw.WriteAt(b, off)
	f.Unpin()
	return n, err
}

// Write writes at the file's position (kept across reopens) and advances
// it. Concurrent Writes are not ordered.
func (f *CachedFile) Write(b []byte) (int, error) {
	n, err := f.WriteAt(b, f.off.Load())
	f.off.Add(int64(n))
	return n, err
}

// Sync implements File. The kernel writes back a file's data whichever
// descriptor wrote it, so a Sync after a reopen covers earlier writes.
func (f *CachedFile) Sync() error {
	raw, err := f.Pin()
	if err != nil {
		return err
	}
	err = raw.Sync()
	f.Unpin()
	return err
}

// Datasync implements Datasyncer (see Datasync).
func (f *CachedFile) Datasync() error {
	raw, err := f.Pin()
	if err != nil {
		return err
	}
	err = Datasync(raw)
	f.Unpin()
	return err
}

// Reserve implements Reserver (see Reserve).
func (f *CachedFile) Reserve(off, n int64) error {
	raw, err := f.Pin()
	if err != nil {
		return err
	}
	err = Reserve(raw, off, n)
	f.Unpin()
	return err
}

// Truncate implements File.
func (f *CachedFile) Truncate(size int64) error {
	raw, err := f.Pin()
	if err != nil {
		return err
	}
	err = raw.Truncate(size)
	f.Unpin()
	return err
}

// Stat implements File. A file without a descriptor is not opened for it:
// fsys is asked by name.
func (f *CachedFile) Stat() (os.FileInfo, error) {
	if f.refs.Load() < 0 {
		f.mu.Lock()
		if f.refs.Load() < 0 && !f.closed.Load() {
			fi, err := f.fsys.Stat(f.Name())
			f.mu.Unlock()
			return fi, err
		}
		f.mu.Unlock()
	}
	raw, err := f.Pin()
	if err != nil {
		return nil, err
	}
	fi, err := raw.Stat()
	f.Unpin()
	return fi, err
}

// Pinner is implemented by files whose descriptor must be pinned while a
// caller uses it directly (CachedFile): the wire layer pins a file section
// for the length of its sendfile.
type Pinner interface {
	io.ReaderAt
	Pin() (File, error)
	Unpin()
}

// DefaultFileCacheCapacity is the descriptor budget of a FileCache sized
// from the process's limit (DescriptorLimit): the limit less a quarter of it
// (at least 256) left for sockets and other files, at least 64, at most
// 1<<20; 4,096 if the limit is unknown.
func DefaultFileCacheCapacity() int {
	return fileCacheCapacityFor(DescriptorLimit())
}

func fileCacheCapacityFor(limit uint64) int {
	if limit == 0 {
		return 4096
	}
	limit = min(limit, 1<<20)
	headroom := max(limit/4, 256)
	if limit <= headroom+64 {
		return 64
	}
	return int(limit - headroom)
}
