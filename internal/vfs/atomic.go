package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TmpSuffix names the temporary file WriteFileAtomic writes before renaming it
// into place; a file with it left by a crash is garbage.
const TmpSuffix = ".tmp"

// WriteFileAtomic replaces path with data so that after a crash either the
// old or the new content is there, never a torn mix: it writes <path>.tmp
// (a leftover one is removed first, never reused), fsyncs it, renames it
// over path and fsyncs the directory. perm is the new file's mode. On a
// failure before the rename the temporary file is removed and path is left
// as it was; a failure of the final directory sync is reported wrapping
// ErrNotDurable, with the new content already in place.
func WriteFileAtomic(fsys FS, path string, data []byte, perm os.FileMode) error {
	tmp := path + TmpSuffix
	if err := fsys.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%w: %w", ErrNotDurable, err)
	}
	return nil
}

// ErrNotDurable wraps a WriteFileAtomic error that came after the rename: the
// new content is in place (and is what readers see now), but the rename may
// not survive a power loss.
var ErrNotDurable = errors.New("renamed into place, but the directory sync failed")

// maxSmallFile bounds what ReadFile reads: checkpoints, producer snapshots,
// topic metadata and similar files are far smaller; a larger file is damage.
const maxSmallFile = 64 << 20

// ReadFile reads the whole of a small metadata file through fsys; a file
// over 64 MiB is an error rather than a huge allocation.
func ReadFile(fsys FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxSmallFile {
		return nil, fmt.Errorf("%s: %d bytes is too large", path, fi.Size())
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf, nil
}
