package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// recycleMemory writes mib MiB into a file under dir and deletes it at once,
// without syncing. Its page-cache pages are freed when it is removed, and the
// next writes (the run that follows) get those pages back before the guest
// reports them to its host as free.
//
// Why: on a VM with free page reporting (as this harness's machine), a write
// into memory the guest handed back to its host costs several times the CPU
// of a write into memory just freed (the harness's page-cache probe: 1.45
// against 0.18 CPU s/GB), and which one a run gets depends on what the
// previous runs and other processes freed — it moves a produce run of the
// same binary between 0.6 and 3 CPU s/GB. With --recycle-mib every produce
// run starts with recycled memory, so that two versions of the broker can be
// compared; the default (0) measures what a broker meets, fresh memory
// included, and only that rewrites docs/.
func recycleMemory(dir string, mib int64) error {
	path := filepath.Join(dir, "recycle.tmp")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("recycle: %w", err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range mib {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("recycle: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("recycle: %w", err)
	}
	return os.Remove(path)
}
