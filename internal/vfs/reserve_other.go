//go:build !linux

package vfs

import (
	"errors"
	"os"
)

func reserve(*os.File, int64, int64) error { return errors.ErrUnsupported }

// BlocksPastEnd reports whether the file fi describes holds disk blocks
// past its size; blocks are reserved on Linux only, so never here.
func BlocksPastEnd(os.FileInfo) bool { return false }
