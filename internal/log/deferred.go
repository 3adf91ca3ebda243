package log

// Deferred loading: OpenManager does not open the partition directories.
// Each log is entered with what the data-dir checkpoints say, and its
// directory is read — segments, indexes, the aborted-transaction index, the
// leader-epoch checkpoint, and, through ManagerOptions.OnLoad, the producer
// state — on its first use, or by the background loader (LoadDeferred) once
// the broker serves. So a restart with many idle partitions touches none of
// them before it serves.
//
// After a clean shutdown every log was flushed to its end, so its end offset
// is its checkpointed recovery point and its offsets can be answered before
// it is read. After an unclean shutdown nothing of a log is answered before
// it is recovered (the segments from the one holding its recovery point on
// re-validated, as Kafka does), its offsets included: recovery is not
// skipped, only moved to the log's first use. A broker that shuts down
// cleanly with logs still unrecovered lists them for the next start to
// recover (unrecovered.go).

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
)

// deferredLoad is a log whose directory has not been read yet.
type deferredLoad struct {
	mu   sync.Mutex
	p    loadParams
	done bool  // (mu) loaded, failed, or abandoned at close
	err  error // (mu) why the load failed
	// hwSet, hwOffset: a SetHighWatermark kept for the load (deferred_hw.go).
	hwSet    bool  // (mu)
	hwOffset int64 // (mu)
}

// LoadView is a log being loaded, as ManagerOptions.OnLoad sees it: its
// methods read the log without waiting for the load to finish (other
// callers of the log wait until OnLoad returns).
type LoadView struct{ l *Log }

// Log is the log being loaded (do not call its methods from OnLoad: they
// wait for the load).
func (v LoadView) Log() *Log { return v.l }

// Dir is the log's directory.
func (v LoadView) Dir() string { return v.l.dir }

// LogStartOffset is the log start offset.
func (v LoadView) LogStartOffset() int64 { return v.l.logStart.Load() }

// LogEndOffset is the log end offset.
func (v LoadView) LogEndOffset() int64 { return v.l.leo.Load() }

// ScanBatches is Log.ScanBatches.
func (v LoadView) ScanBatches(from int64, fn func(h batch.Header, at BatchPosition) bool) error {
	return v.l.scanBatches(from, fn)
}

// ReadBytes is Log.ReadBytes.
func (v LoadView) ReadBytes(offset int64, maxBytes int) ([]byte, error) {
	return v.l.readBytes(offset, maxBytes)
}

// ReadBytesToEnd is Log.ReadBytesToEnd.
func (v LoadView) ReadBytesToEnd(offset int64, maxBytes int) ([]byte, error) {
	return v.l.readBytesToEnd(offset, maxBytes)
}

// RestoreAbortedTxn is Log.RestoreAbortedTxn.
func (v LoadView) RestoreAbortedTxn(t AbortedTxn) error { return v.l.restoreAbortedTxn(t) }

// deferLoad enters l unloaded, with the offsets the checkpoints give.
func (l *Log) deferLoad(p loadParams) {
	l.leo.Store(p.recoveryPoint)
	l.recoveryPoint.Store(p.recoveryPoint)
	l.durable.Store(p.recoveryPoint)
	l.logStart.Store(max(p.logStart, 0))
	l.deferred.Store(&deferredLoad{p: p})
	l.wasDeferred = true
	l.offsetsUnknown = !p.clean
}

// needOffsets loads a log deferred after an unclean shutdown before its
// offsets are read: they are known only once it is recovered. (After a
// clean shutdown the checkpointed ones are right.)
func (l *Log) needOffsets() {
	if l.offsetsUnknown && !l.segsLoaded.Load() {
		_ = l.ensureLoaded()
	}
}

// Deferred reports whether the log was entered unloaded at start (its
// producer state is rebuilt by ManagerOptions.OnLoad, not by the caller of
// OpenManager), whether or not it has been loaded since.
func (l *Log) Deferred() bool { return l.wasDeferred }

// Loaded reports whether the log's directory has been read.
func (l *Log) Loaded() bool { return l.deferred.Load() == nil }

// ensureLoaded loads a deferred log (once; concurrent callers wait for it)
// and returns the load's error, if it failed.
func (l *Log) ensureLoaded() error {
	d := l.deferred.Load()
	if d == nil {
		return nil
	}
	return l.loadDeferred(d)
}

func (l *Log) loadDeferred(d *deferredLoad) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return d.err
	}
	d.done = true
	want := l.leo.Load()
	if err := l.load(d.p); err != nil {
		d.err = storageErr(fmt.Sprintf("loading %s", l.dir), err)
		var se *StorageError
		if errors.As(d.err, &se) {
			l.failed.CompareAndSwap(nil, se) // appends refuse with KAFKA_STORAGE_ERROR
		}
		l.logger().Error("cannot load partition", "dir", l.dir, "err", err)
		return d.err
	}
	l.segsLoaded.Store(true)
	if got := l.leo.Load(); d.p.clean && got != want {
		// Cannot happen after a clean shutdown (every log was flushed to its
		// end and checkpointed); say so if it does.
		l.logger().Warn("log end offset differs from its checkpointed recovery point", "dir", l.dir, "checkpoint", want, "log_end_offset", got)
	}
	if hook := l.m.opts.OnLoad; hook != nil {
		if err := hook(LoadView{l}); err != nil {
			l.logger().Error("partition loaded, but its OnLoad hook failed", "dir", l.dir, "err", err)
		}
	}
	l.applyDeferredHighWatermark(d)
	l.deferred.Store(nil)
	return nil
}

// abandonLoad marks a deferred log as never to be loaded (it is being
// closed); it reports whether the log was still unloaded.
func (l *Log) abandonLoad() bool {
	d := l.deferred.Load()
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.deferred.Load() == nil {
		return false // loaded meanwhile
	}
	if !d.done {
		d.done, d.err = true, ErrClosed
	}
	return true
}

// LoadDeferred loads the logs still waiting for their first use, with
// workers goroutines (at least 1), until all are loaded or stop is closed
// (or the manager closes). It returns how many it loaded and how long that
// took. The broker runs it in the background once it serves.
func (m *Manager) LoadDeferred(workers int, stop <-chan struct{}) (int, time.Duration) {
	start := time.Now()
	var pending []*Log
	for _, l := range m.allLogs() {
		if !l.Loaded() {
			pending = append(pending, l)
		}
	}
	var next, loaded atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-m.closing():
					return
				default:
				}
				i := int(next.Add(1)) - 1
				if i >= len(pending) {
					return
				}
				if !pending[i].Loaded() && pending[i].ensureLoaded() == nil {
					loaded.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(loaded.Load()), time.Since(start)
}

// closing is closed when Close starts.
func (m *Manager) closing() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closingCh == nil {
		m.closingCh = make(chan struct{})
		if m.closed {
			close(m.closingCh)
		}
	}
	return m.closingCh
}

// Load reads the log's directory now if its loading was deferred (see
// deferred.go); it returns the load's error. Most methods load the log
// themselves; callers that read state the load rebuilds elsewhere (the
// producer state, through OnLoad) call it first.
func (l *Log) Load() error { return l.ensureLoaded() }
