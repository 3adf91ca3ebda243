package wire

import "syscall"

// mapFrame maps size bytes of anonymous memory outside the Go heap.
func mapFrame(size int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, false
	}
	return b, true
}

// dropFramePages gives b's pages back to the OS; b stays mapped and reads
// as zeros until written again.
func dropFramePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
