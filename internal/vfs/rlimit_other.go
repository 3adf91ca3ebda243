//go:build !unix

package vfs

// DescriptorLimit is 0 (unknown) outside Unix.
func DescriptorLimit() uint64 { return 0 }
