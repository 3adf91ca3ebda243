//go:build !linux

package vfs

import "os"

// fdatasync falls back to fsync where fdatasync(2) is not wired up.
func fdatasync(f *os.File) error { return f.Sync() }
