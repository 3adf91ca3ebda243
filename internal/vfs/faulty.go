package vfs

import (
	"os"
	"strings"
	"sync"
	"syscall"
)

// Faulty wraps an FS and fails chosen operations, so that tests can ask what
// happens when the Nth write, a sync of one file or a rename fails. Ops are
// named as MemFS.SetFault names them: "open", "read", "write", "sync",
// "truncate", "reserve", "close", "rename", "remove", "syncdir", "mkdir", "readdir",
// "stat". Rules are checked in the order added; the first that fires fails
// the operation with a *os.PathError around its error. With no rules Faulty
// behaves exactly like the FS it wraps.
type Faulty struct {
	FS
	mu    sync.Mutex
	rules []*Rule
	ops   map[string]int // operations seen, by op
}

// Rule is one fault: it fires for operations of Op (empty: every op) on
// paths containing PathContains (empty: every path), starting with the Nth
// matching operation counted from 1 (0: the first), Times times in a row
// (0: once when Nth is set, on every matching operation when it is not).
type Rule struct {
	Op           string
	PathContains string
	Nth          int
	Times        int
	Err          error // defaults to EIO

	seen, fired int
}

// Fired reports how many times the rule has failed an operation.
func (r *Rule) Fired() int { return r.fired }

// NewFaulty wraps fsys.
func NewFaulty(fsys FS) *Faulty { return &Faulty{FS: fsys, ops: map[string]int{}} }

// Add installs a rule and returns it (to read Fired later).
func (f *Faulty) Add(r Rule) *Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	rr := r
	if rr.Err == nil {
		rr.Err = syscall.EIO
	}
	f.rules = append(f.rules, &rr)
	return &rr
}

// Clear removes every rule.
func (f *Faulty) Clear() {
	f.mu.Lock()
	f.rules = nil
	f.mu.Unlock()
}

// Count returns how many operations of op have been attempted.
func (f *Faulty) Count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops[op]
}

func (f *Faulty) check(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[op]++
	for _, r := range f.rules {
		if r.Op != "" && r.Op != op || r.PathContains != "" && !strings.Contains(name, r.PathContains) {
			continue
		}
		r.seen++
		if r.seen < r.Nth || r.Nth > 0 && r.Times == 0 && r.seen > r.Nth {
			continue
		}
		if r.Times > 0 && r.fired >= r.Times {
			continue
		}
		r.fired++
		return &os.PathError{Op: op, Path: name, Err: r.Err}
	}
	return nil
}

// OpenFile implements FS.
func (f *Faulty) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := f.check("open", name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

// Remove implements FS.
func (f *Faulty) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

// Rename implements FS.
func (f *Faulty) Rename(oldpath, newpath string) error {
	if err := f.check("rename", newpath); err != nil {
		return err
	}
	return f.FS.Rename(oldpath, newpath)
}

// MkdirAll implements FS.
func (f *Faulty) MkdirAll(path string, perm os.FileMode) error {
	if err := f.check("mkdir", path); err != nil {
		return err
	}
	return f.FS.MkdirAll(path, perm)
}

// ReadDir implements FS.
func (f *Faulty) ReadDir(name string) ([]os.DirEntry, error) {
	if err := f.check("readdir", name); err != nil {
		return nil, err
	}
	return f.FS.ReadDir(name)
}

// Stat implements FS.
func (f *Faulty) Stat(name string) (os.FileInfo, error) {
	if err := f.check("stat", name); err != nil {
		return nil, err
	}
	return f.FS.Stat(name)
}

// SyncDir implements FS.
func (f *Faulty) SyncDir(name string) error {
	if err := f.check("syncdir", name); err != nil {
		return err
	}
	return f.FS.SyncDir(name)
}

type faultyFile struct {
	File
	fs *Faulty
}

func (f *faultyFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.fs.check("read", f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fs.check("write", f.Name()); err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f *faultyFile) Write(b []byte) (int, error) {
	if err := f.fs.check("write", f.Name()); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}

func (f *faultyFile) Sync() error {
	if err := f.fs.check("sync", f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

// Datasync counts as a "sync".
func (f *faultyFile) Datasync() error {
	if err := f.fs.check("sync", f.Name()); err != nil {
		return err
	}
	return Datasync(f.File)
}

// Reserve counts as a "reserve".
func (f *faultyFile) Reserve(off, n int64) error {
	if err := f.fs.check("reserve", f.Name()); err != nil {
		return err
	}
	return Reserve(f.File, off, n)
}

func (f *faultyFile) Truncate(size int64) error {
	if err := f.fs.check("truncate", f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *faultyFile) Close() error {
	if err := f.fs.check("close", f.Name()); err != nil {
		_ = f.File.Close()
		return err
	}
	return f.File.Close()
}
