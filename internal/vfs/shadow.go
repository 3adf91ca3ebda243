package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Shadow wraps an FS and keeps, for every file under Root, a copy of its
// content as of its last fsync: the state a machine crash would leave on
// the disk. It exists for the fault checker's lose-unfsynced fault
// (docs/reliability.md): after killing the process, the checker replaces
// Root with the copy and starts the broker again, which then sees exactly
// what its own fsyncs made durable.
//
// The model: file data is durable up to the file's last Sync or Datasync
// (writes and truncations since then are lost); directory operations
// (creating, renaming and removing files and directories) are durable at
// once, as on a file system that journals its metadata in order. The copy
// of Root is ShadowPath(dir, Root); NewShadow starts it as a copy of Root
// as it is then (a start counts as a sync of everything).
//
// It costs a second copy of every synced byte; it is for tests only.
type Shadow struct {
	FS
	root, dir string

	mu      sync.Mutex
	entries map[string]*shadowEntry // by the copy's current path
}

// shadowEntry is one file of the copy: where it is now (renames move it,
// with the handles open on it) and what is not synced yet.
type shadowEntry struct {
	sh    string
	dirty bool
	from  int64 // lowest offset written or truncated to since the last sync
	gone  bool  // removed, or replaced by a rename: its handles sync nothing
}

// ShadowPath is where a Shadow with shadow directory dir keeps the copy of
// root (an absolute path): dir followed by root.
func ShadowPath(dir, root string) string {
	return filepath.Join(dir, filepath.Clean(root))
}

// NewShadow wraps fsys: the copy of root (absolute) under dir is replaced
// by a copy of root as it is now.
func NewShadow(fsys FS, root, dir string) (*Shadow, error) {
	if !filepath.IsAbs(root) || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("vfs: shadow of %q in %q: both paths must be absolute", root, dir)
	}
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	if dir == root || strings.HasPrefix(dir, root+string(filepath.Separator)) {
		return nil, fmt.Errorf("vfs: shadow directory %s is inside %s", dir, root)
	}
	s := &Shadow{FS: fsys, root: root, dir: dir, entries: map[string]*shadowEntry{}}
	copyTo := ShadowPath(dir, root)
	if err := os.RemoveAll(copyTo); err != nil {
		return nil, err
	}
	if err := CopyTree(root, copyTo); err != nil {
		return nil, fmt.Errorf("vfs: shadow of %s: %w", root, err)
	}
	return s, nil
}

// CopyTree copies the directory tree src (regular files and directories)
// to dst, which must not exist yet; a missing src makes an empty dst.
func CopyTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dst, 0o755)
	}
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && p != src {
				return nil // removed while we walked
			}
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// shadowOf returns the copy's path of name, or "" when name is not under root.
func (s *Shadow) shadowOf(name string) string {
	abs, err := filepath.Abs(name)
	if err != nil {
		return ""
	}
	if abs != s.root && !strings.HasPrefix(abs, s.root+string(filepath.Separator)) {
		return ""
	}
	return ShadowPath(s.dir, abs)
}

// entry returns the copy's entry at sh, made if needed.
func (s *Shadow) entry(sh string) *shadowEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[sh]
	if e == nil {
		e = &shadowEntry{sh: sh}
		s.entries[sh] = e
	}
	return e
}

func (s *Shadow) markDirty(e *shadowEntry, off int64) {
	s.mu.Lock()
	if !e.dirty || off < e.from {
		e.dirty, e.from = true, off
	}
	s.mu.Unlock()
}

// OpenFile implements FS. A file created is created (empty) in the copy
// too; O_TRUNC counts as a truncation, lost unless synced.
func (s *Shadow) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	sh := s.shadowOf(name)
	if sh == "" || flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f, nil
	}
	if flag&os.O_CREATE != 0 {
		if c, err := os.OpenFile(sh, os.O_WRONLY|os.O_CREATE, perm); err == nil {
			_ = c.Close()
		}
	}
	e := s.entry(sh)
	if flag&os.O_TRUNC != 0 {
		s.markDirty(e, 0)
	}
	return &shadowFile{File: f, s: s, e: e, append: flag&os.O_APPEND != 0}, nil
}

// Remove implements FS.
func (s *Shadow) Remove(name string) error {
	if err := s.FS.Remove(name); err != nil {
		return err
	}
	if sh := s.shadowOf(name); sh != "" {
		s.mu.Lock()
		_ = os.Remove(sh)
		if e := s.entries[sh]; e != nil {
			e.gone = true
			delete(s.entries, sh)
		}
		s.mu.Unlock()
	}
	return nil
}

// Rename implements FS: the copy is renamed too, with what is not synced yet.
func (s *Shadow) Rename(oldpath, newpath string) error {
	if err := s.FS.Rename(oldpath, newpath); err != nil {
		return err
	}
	so, sn := s.shadowOf(oldpath), s.shadowOf(newpath)
	if so == "" || sn == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = os.Rename(so, sn)
	if e := s.entries[sn]; e != nil { // replaced
		e.gone = true
		delete(s.entries, sn)
	}
	moved := map[string]*shadowEntry{}
	for k, e := range s.entries {
		switch {
		case k == so:
			e.sh = sn
		case strings.HasPrefix(k, so+string(filepath.Separator)):
			e.sh = sn + k[len(so):]
		default:
			continue
		}
		delete(s.entries, k)
		moved[e.sh] = e
	}
	for k, e := range moved {
		s.entries[k] = e
	}
	return nil
}

// MkdirAll implements FS.
func (s *Shadow) MkdirAll(path string, perm os.FileMode) error {
	if err := s.FS.MkdirAll(path, perm); err != nil {
		return err
	}
	if sh := s.shadowOf(path); sh != "" {
		_ = os.MkdirAll(sh, perm)
	}
	return nil
}

// sync makes the copy of f's file what the file holds now.
func (s *Shadow) sync(f *shadowFile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := f.e
	if e.gone || !e.dirty {
		return nil
	}
	from := e.from
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	c, err := os.OpenFile(e.sh, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	for off := from; off < size; {
		n, rerr := f.File.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n > 0 {
			if _, err := c.WriteAt(buf[:n], off); err != nil {
				return err
			}
			off += int64(n)
		}
		if rerr != nil {
			if rerr == io.EOF {
				break
			}
			return rerr
		}
	}
	if err := c.Truncate(size); err != nil {
		return err
	}
	e.dirty = false
	return nil
}

type shadowFile struct {
	File
	s      *Shadow
	e      *shadowEntry
	append bool
}

func (f *shadowFile) WriteAt(b []byte, off int64) (int, error) {
	f.s.markDirty(f.e, off)
	return f.File.WriteAt(b, off)
}

func (f *shadowFile) Write(b []byte) (int, error) {
	off := int64(0) // unknown position: everything counts as not synced
	if f.append {
		if fi, err := f.File.Stat(); err == nil {
			off = fi.Size()
		}
	} else if sk, ok := f.File.(io.Seeker); ok {
		if pos, err := sk.Seek(0, io.SeekCurrent); err == nil {
			off = pos
		}
	}
	f.s.markDirty(f.e, off)
	return f.File.Write(b)
}

// Reserve passes through: reserved blocks change neither the file's size
// nor its content, so the copy has nothing to learn.
func (f *shadowFile) Reserve(off, n int64) error {
	return Reserve(f.File, off, n)
}

func (f *shadowFile) Truncate(size int64) error {
	f.s.markDirty(f.e, size)
	return f.File.Truncate(size)
}

func (f *shadowFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	return f.s.sync(f)
}

// Datasync counts as a sync.
func (f *shadowFile) Datasync() error {
	if err := Datasync(f.File); err != nil {
		return err
	}
	return f.s.sync(f)
}
