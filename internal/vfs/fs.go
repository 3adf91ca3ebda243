// Package vfs is the filesystem seam under everything Sluice writes: partition
// logs, checkpoints, topic metadata, SCRAM credentials, producer snapshots and
// (later) the metadata quorum. OS is the real filesystem; MemFS is an in-memory
// one that simulates what a power loss or a process crash leaves behind; Faulty
// wraps any FS and fails chosen operations (the Nth write, every sync of a
// path, ...). Callers never use package os for files they write.
package vfs

import (
	"errors"
	"io"
	"os"
)

// FS is the filesystem interface. OS is the real one; MemFS is an
// in-memory one that can simulate crashes for tests. Paths use the host
// separator ('/' for MemFS).
type FS interface {
	// OpenFile opens a file like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames a file or directory like os.Rename.
	Rename(oldpath, newpath string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]os.DirEntry, error)
	// Stat describes a file or directory.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir(name string) error
}

// File is an open file. OS returns *os.File, so a caller that wants
// sendfile can type-assert FileRange.File to *os.File.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	// Sync makes the file's data durable.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Close closes the file.
	Close() error
	// Stat describes the file.
	Stat() (os.FileInfo, error)
	// Name is the name the file was opened with.
	Name() string
}

// OS returns the filesystem of the operating system.
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Datasyncer is an optional File method: make the file's data durable, with
// only the metadata needed to read it back (its size), like fdatasync(2).
// Modification times are not made durable. Files without it are Synced.
type Datasyncer interface {
	Datasync() error
}

// Reserver is an optional File method: allocate disk blocks for the n
// bytes at off without changing the file's size, so that later writes
// there fill blocks already allocated (fallocate(2) with
// FALLOC_FL_KEEP_SIZE). Blocks past the end stay allocated until the file
// is truncated or removed.
type Reserver interface {
	Reserve(off, n int64) error
}

// Reserve allocates the n bytes at off of f without changing its size (see
// Reserver). It returns an error wrapping errors.ErrUnsupported where the
// file or its filesystem cannot; callers treat every error as "no
// reservation" (a write still allocates as it goes).
func Reserve(f File, off, n int64) error {
	switch f := f.(type) {
	case Reserver:
		return f.Reserve(off, n)
	case *os.File:
		return reserve(f, off, n)
	}
	return errors.ErrUnsupported
}

// Datasync makes f's data durable the cheapest safe way: fdatasync(2) for
// an *os.File on Linux (the size of a file grown by appends is included),
// the file's own Datasync if it has one, else Sync. Segment creation,
// truncation and directory entries still use Sync / SyncDir.
func Datasync(f File) error {
	switch f := f.(type) {
	case Datasyncer:
		return f.Datasync()
	case *os.File:
		return fdatasync(f)
	}
	return f.Sync()
}
