package main

import (
	"os"
	"syscall"
)

// reserveBlocks is fallocate(2) with FALLOC_FL_KEEP_SIZE.
func reserveBlocks(f *os.File, off, n int64) error {
	return syscall.Fallocate(int(f.Fd()), 1, off, n)
}
