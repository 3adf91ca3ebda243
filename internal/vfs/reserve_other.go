//go:build !linux

package vfs

import (
	"errors"
	"os"
)

func reserve(*os.File, int64, int64) error { return errors.ErrUnsupported }
