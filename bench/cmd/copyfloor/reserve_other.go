//go:build !linux

package main

import (
	"errors"
	"os"
)

func reserveBlocks(*os.File, int64, int64) error { return errors.ErrUnsupported }
