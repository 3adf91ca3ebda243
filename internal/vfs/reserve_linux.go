package vfs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE.
const fallocKeepSize = 0x1

// ext4SuperMagic is EXT4_SUPER_MAGIC (ext2, ext3 and ext4 alike).
const ext4SuperMagic = 0xEF53

// reserve calls fallocate(2) with FALLOC_FL_KEEP_SIZE on f's descriptor,
// on ext4 only: the one filesystem it was measured on. XFS preallocates
// past the end by itself; a review also pointed to XFS writing back a
// file's dirty tail when it is truncated to its own size (how reservations
// are given back, under the log's lock) and to btrfs not compressing writes
// into preallocated extents, neither checked here. Other filesystems, and
// a filesystem without fallocate (EOPNOTSUPP), get an error wrapping
// errors.ErrUnsupported.
func reserve(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	notExt4 := false
	if err := rc.Control(func(fd uintptr) {
		var st syscall.Statfs_t
		if serr = syscall.Fstatfs(int(fd), &st); serr != nil {
			return
		}
		if st.Type != ext4SuperMagic {
			notExt4 = true
			return
		}
		for {
			serr = syscall.Fallocate(int(fd), fallocKeepSize, off, n)
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: os.ErrClosed}
	}
	switch {
	case notExt4:
		return fmt.Errorf("fallocate %s: %w: reserving blocks ahead is done on ext4 only", f.Name(), errors.ErrUnsupported)
	case serr == nil:
		return nil
	case errors.Is(serr, syscall.EOPNOTSUPP), errors.Is(serr, syscall.ENOSYS):
		return fmt.Errorf("fallocate %s: %w (%w)", f.Name(), errors.ErrUnsupported, serr)
	}
	return &os.PathError{Op: "fallocate", Path: f.Name(), Err: serr}
}

// BlocksPastEnd reports whether the file fi describes holds disk blocks
// past its size (rounded up to 4 KiB): blocks reserved ahead of writes, or
// a filesystem's own preallocation. False when fi does not say (a file not
// on a disk).
func BlocksPastEnd(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return st.Blocks*512 > (fi.Size()+4095)&^4095
}
