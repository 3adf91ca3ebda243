package log

import (
	"math"
	"sync"
)

// endFloor remembers the lowest log end offset a log had since it was
// last asked: its end after loading (a crash may have cost it its
// un-fsynced tail) and after every truncation. The log cleaner asks
// before each look at a log and lowers its checkpoint to it, as Apache
// Kafka's cleaner manager does when a log is truncated below its
// checkpoint: records appended again above the new end (fetched from a
// leader) are dirty, whatever offsets they reuse.
type endFloor struct {
	mu  sync.Mutex
	set bool
	low int64
}

func (f *endFloor) note(leo int64) {
	f.mu.Lock()
	if !f.set || leo < f.low {
		f.set, f.low = true, leo
	}
	f.mu.Unlock()
}

func (f *endFloor) take() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	low, ok := f.low, f.set
	f.set, f.low = false, math.MaxInt64
	return low, ok
}

// TakeEndFloor returns the lowest log end offset since the previous call
// (or since the log was opened): the end it was loaded with and every end
// a truncation left, and false when neither happened since. It forgets
// what it returns: one caller only (the log cleaner).
func (l *Log) TakeEndFloor() (int64, bool) {
	l.needOffsets()
	return l.endFloor.take()
}
