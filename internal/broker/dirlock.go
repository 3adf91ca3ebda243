package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the data directory's lock, held for the broker's lifetime, as
// Kafka holds <log.dir>/.lock: a second broker on the same directory would
// run retention and compaction on the same segments and could leave a
// clean-shutdown marker while the first one is still writing.
const lockFile = ".lock"

// lockDataDir creates dir if needed and takes an exclusive, non-blocking
// flock on dir/.lock. The lock goes with the returned file (or the process).
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sluice: data dir: %w", err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sluice: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sluice: data directory %s is in use by another broker process (%s is locked)", dir, path)
		}
		return nil, fmt.Errorf("sluice: locking %s: %w", path, err)
	}
	return f, nil
}
