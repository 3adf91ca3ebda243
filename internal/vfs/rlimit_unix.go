//go:build unix

package vfs

import "syscall"

// DescriptorLimit is the process's soft limit on open file descriptors
// (RLIMIT_NOFILE; the Go runtime raises it to the hard limit at start), 0 if
// unknown.
func DescriptorLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
