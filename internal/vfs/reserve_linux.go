package vfs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE.
const fallocKeepSize = 0x1

// reserve calls fallocate(2) with FALLOC_FL_KEEP_SIZE on f's descriptor.
// A filesystem without it answers EOPNOTSUPP, returned wrapping
// errors.ErrUnsupported.
func reserve(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
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
	case serr == nil:
		return nil
	case errors.Is(serr, syscall.EOPNOTSUPP), errors.Is(serr, syscall.ENOSYS):
		return fmt.Errorf("fallocate %s: %w (%w)", f.Name(), errors.ErrUnsupported, serr)
	}
	return &os.PathError{Op: "fallocate", Path: f.Name(), Err: serr}
}
