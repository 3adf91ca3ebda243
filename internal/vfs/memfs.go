package vfs

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that can simulate what a crash does to a disk,
// for tests. It tracks, per file, the bytes last made durable by Sync and,
// per directory entry, whether the creation, rename or removal was made
// durable by SyncDir of its directory. Directories themselves (MkdirAll,
// directory renames and removals) are durable at once.
//
// Crash simulates power loss: open handles die, unsynced directory entries
// revert, and each file keeps its synced bytes — optionally plus a torn,
// possibly garbled prefix of the bytes appended since (CrashOptions).
// ProcessCrash simulates a process crash: handles die, the page cache (all
// written data) survives. SetSpaceLimit makes writes fail with ENOSPC once
// the files would exceed a total size; SetFault injects arbitrary errors.
type MemFS struct {
	mu    sync.Mutex
	gen   int
	cur   map[string]*memNode // the live namespace
	dur   map[string]*memNode // the namespace a crash reverts to
	limit int64               // total bytes allowed, <0 = unlimited
	fault func(op, name string) error
	now   func() time.Time
}

type memNode struct {
	dir    bool
	data   []byte
	synced []byte
	mod    time.Time
}

// NewMemFS returns an empty MemFS whose root directory "/" exists.
func NewMemFS() *MemFS {
	root := &memNode{dir: true}
	return &MemFS{
		cur:   map[string]*memNode{"/": root},
		dur:   map[string]*memNode{"/": root},
		limit: -1,
		now:   time.Now,
	}
}

func clean(name string) string { return path.Clean("/" + name) }

// SetSpaceLimit makes the total size of all files at most n bytes: a write
// that would exceed it writes what fits and fails with ENOSPC. n < 0 lifts
// the limit.
func (m *MemFS) SetSpaceLimit(n int64) {
	m.mu.Lock()
	m.limit = n
	m.mu.Unlock()
}

// SetFault installs f, called before every operation with its name ("open",
// "write", "read", "sync", "truncate", "rename", "remove", "syncdir",
// "mkdir") and the path; a non-nil result fails the operation. nil removes
// it.
func (m *MemFS) SetFault(f func(op, name string) error) {
	m.mu.Lock()
	m.fault = f
	m.mu.Unlock()
}

func (m *MemFS) check(op, name string) error {
	if m.fault != nil {
		if err := m.fault(op, name); err != nil {
			return &os.PathError{Op: op, Path: name, Err: err}
		}
	}
	return nil
}

// CrashOptions shape what unsynced data survives Crash.
type CrashOptions struct {
	// Rand picks torn lengths and garbage; nil means no torn tails.
	Rand *rand.Rand
	// TornTail keeps a random prefix of the bytes appended to a file since
	// its last sync (a write that partly reached the disk).
	TornTail bool
	// Garble flips random bytes in the kept unsynced prefix.
	Garble bool
}

// Crash simulates power loss (see MemFS).
func (m *MemFS) Crash(opts CrashOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.cur = make(map[string]*memNode, len(m.dur))
	for p, n := range m.dur {
		m.cur[p] = n
	}
	seen := map[*memNode]bool{}
	for _, n := range m.cur {
		if n.dir || seen[n] {
			continue
		}
		seen[n] = true
		data := append([]byte(nil), n.synced...)
		if opts.TornTail && opts.Rand != nil && len(n.data) > len(n.synced) && string(n.data[:len(n.synced)]) == string(n.synced) {
			extra := n.data[len(n.synced):]
			k := opts.Rand.IntN(len(extra) + 1)
			kept := append([]byte(nil), extra[:k]...)
			if opts.Garble && k > 0 {
				for i := 0; i < 1+opts.Rand.IntN(3); i++ {
					kept[opts.Rand.IntN(k)] ^= byte(1 + opts.Rand.IntN(255))
				}
			}
			data = append(data, kept...)
		}
		n.data = data
		n.synced = append([]byte(nil), data...)
	}
}

// ProcessCrash simulates the process dying: open handles become invalid,
// everything written survives.
func (m *MemFS) ProcessCrash() {
	m.mu.Lock()
	m.gen++
	m.mu.Unlock()
}

// FlipByte XORs the byte at off of a file with mask, in both the live and
// the durable content (a bit rot or a bad sector).
func (m *MemFS) FlipByte(name string, off int64, mask byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[clean(name)]
	if !ok || n.dir {
		return &os.PathError{Op: "flip", Path: name, Err: os.ErrNotExist}
	}
	if off < int64(len(n.data)) {
		n.data[off] ^= mask
	}
	if off < int64(len(n.synced)) {
		n.synced[off] ^= mask
	}
	return nil
}

// ReadFile returns a copy of a file's live content.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[clean(name)]
	if !ok || n.dir {
		return nil, &os.PathError{Op: "read", Path: name, Err: os.ErrNotExist}
	}
	return append([]byte(nil), n.data...), nil
}

// WriteFile replaces a file's content, durably (test setup).
func (m *MemFS) WriteFile(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if pn, ok := m.cur[path.Dir(p)]; !ok || !pn.dir {
		return &os.PathError{Op: "write", Path: name, Err: os.ErrNotExist}
	}
	n := &memNode{data: append([]byte(nil), data...), synced: append([]byte(nil), data...), mod: m.now()}
	m.cur[p], m.dur[p] = n, n
	return nil
}

// Used returns the total size of the live files.
func (m *MemFS) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used()
}

func (m *MemFS) used() int64 {
	var total int64
	seen := map[*memNode]bool{}
	for _, n := range m.cur {
		if !n.dir && !seen[n] {
			seen[n] = true
			total += int64(len(n.data))
		}
	}
	return total
}

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if err := m.check("open", p); err != nil {
		return nil, err
	}
	n, ok := m.cur[p]
	if ok && n.dir {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	if !ok {
		if flag&os.O_CREATE == 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		if pn, ok := m.cur[path.Dir(p)]; !ok || !pn.dir {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		n = &memNode{mod: m.now()}
		m.cur[p] = n
	} else if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
	}
	if flag&os.O_TRUNC != 0 {
		n.data = n.data[:0:0]
	}
	return &memFile{fs: m, node: n, name: name, gen: m.gen, append: flag&os.O_APPEND != 0}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if err := m.check("remove", p); err != nil {
		return err
	}
	n, ok := m.cur[p]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	if n.dir {
		for q := range m.cur {
			if strings.HasPrefix(q, p+"/") {
				return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
			}
		}
		delete(m.dur, p)
	}
	delete(m.cur, p)
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	op, np := clean(oldpath), clean(newpath)
	if err := m.check("rename", op); err != nil {
		return err
	}
	n, ok := m.cur[op]
	if !ok {
		return &os.PathError{Op: "rename", Path: oldpath, Err: os.ErrNotExist}
	}
	if pn, ok := m.cur[path.Dir(np)]; !ok || !pn.dir {
		return &os.PathError{Op: "rename", Path: newpath, Err: os.ErrNotExist}
	}
	if n.dir {
		// Directories move durably, children included.
		for _, ns := range []map[string]*memNode{m.cur, m.dur} {
			for q, c := range ns {
				if q == op || strings.HasPrefix(q, op+"/") {
					delete(ns, q)
					ns[np+q[len(op):]] = c
				}
			}
		}
		return nil
	}
	delete(m.cur, op)
	m.cur[np] = n
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(name string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if err := m.check("mkdir", p); err != nil {
		return err
	}
	for q := p; ; q = path.Dir(q) {
		if n, ok := m.cur[q]; ok {
			if !n.dir {
				return &os.PathError{Op: "mkdir", Path: q, Err: syscall.ENOTDIR}
			}
		} else {
			d := &memNode{dir: true, mod: m.now()}
			m.cur[q], m.dur[q] = d, d
		}
		if q == "/" {
			return nil
		}
	}
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(name string) ([]os.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if err := m.check("readdir", p); err != nil {
		return nil, err
	}
	if n, ok := m.cur[p]; !ok || !n.dir {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: os.ErrNotExist}
	}
	var out []os.DirEntry
	for q, n := range m.cur {
		if q != "/" && path.Dir(q) == p {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: path.Base(q), n: n}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	n, ok := m.cur[p]
	if !ok {
		return nil, &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
	}
	return memInfo{name: path.Base(p), n: n, size: int64(len(n.data))}, nil
}

// SyncDir implements FS: the directory's file entries become durable.
func (m *MemFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if err := m.check("syncdir", p); err != nil {
		return err
	}
	for q, n := range m.dur {
		if path.Dir(q) == p && !n.dir {
			if m.cur[q] != n {
				delete(m.dur, q)
			}
		}
	}
	for q, n := range m.cur {
		if q != "/" && path.Dir(q) == p && !n.dir {
			m.dur[q] = n
		}
	}
	return nil
}

type memInfo struct {
	name string
	n    *memNode
	size int64
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() os.FileMode {
	if i.n.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return i.n.mod }
func (i memInfo) IsDir() bool        { return i.n.dir }
func (i memInfo) Sys() any           { return nil }

type memFile struct {
	fs     *MemFS
	node   *memNode
	name   string
	gen    int
	append bool
	off    int64
	closed bool
}

func (f *memFile) live(op string) error {
	if f.closed {
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	}
	if f.gen != f.fs.gen {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EIO}
	}
	return f.fs.check(op, clean(f.name))
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(b, f.node.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.writeAtLocked(b, off)
}

func (f *memFile) writeAtLocked(b []byte, off int64) (int, error) {
	if err := f.live("write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EINVAL}
	}
	want := b
	var err error
	if f.fs.limit >= 0 {
		grow := off + int64(len(b)) - int64(len(f.node.data))
		if grow > 0 && f.fs.used()+grow > f.fs.limit {
			room := max(f.fs.limit-f.fs.used(), 0) + int64(len(f.node.data)) - off
			want = b[:max(min(room, int64(len(b))), 0)]
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
	}
	if end := off + int64(len(want)); end > int64(len(f.node.data)) {
		if end > int64(cap(f.node.data)) {
			nd := make([]byte, end, max(end, 2*int64(cap(f.node.data))))
			copy(nd, f.node.data)
			f.node.data = nd
		} else {
			f.node.data = f.node.data[:end]
		}
	}
	copy(f.node.data[off:], want)
	f.node.mod = f.fs.now()
	return len(want), err
}

func (f *memFile) Write(b []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.append {
		f.off = int64(len(f.node.data))
	}
	n, err := f.writeAtLocked(b, f.off)
	f.off += int64(n)
	return n, err
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live("sync"); err != nil {
		return err
	}
	f.node.synced = append(f.node.synced[:0], f.node.data...)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	if size <= int64(len(f.node.data)) {
		f.node.data = f.node.data[:size]
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live("stat"); err != nil {
		return nil, err
	}
	return memInfo{name: path.Base(f.name), n: f.node, size: int64(len(f.node.data))}, nil
}
