package producer

import (
	"fmt"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Rebuild brings s up to date with the partition log l after it was opened:
// it loads the newest usable snapshot in l's directory (see LoadSnapshot)
// and replays the headers of every batch written after it. Call it before
// the log takes appends. Without snapshots the whole log is scanned (headers
// only, plus the transaction markers, whose aborted transactions are put
// back into the log's aborted-transaction index if a crash lost them).
func (s *State) Rebuild(fsys vfs.FS, l *log.Log, nowMs, expirationMs int64) error {
	return s.RebuildFrom(fsys, l, nowMs, expirationMs)
}

// Source is what a rebuild reads of a partition log: a *log.Log, or the
// log.LoadView of a log being loaded on first use.
type Source interface {
	Dir() string
	LogStartOffset() int64
	LogEndOffset() int64
	ScanBatches(from int64, fn func(h batch.Header, at log.BatchPosition) bool) error
	// ReadBytesToEnd reads whole batches up to the log end offset (not
	// the high watermark: markers above it must be replayed too).
	ReadBytesToEnd(offset int64, maxBytes int) ([]byte, error)
	RestoreAbortedTxn(t log.AbortedTxn) error
}

// RebuildFrom is Rebuild from a Source (the broker passes the log.LoadView
// of a log loaded on first use).
func (s *State) RebuildFrom(fsys vfs.FS, l Source, nowMs, expirationMs int64) error {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	return s.rebuild(fsys, l, nowMs, expirationMs, true)
}

// RebuildTruncated rebuilds the state after the log lost a suffix
// (log.ProducerGuardRebuilder; called under the log's append lock), as
// Kafka reloads its producer state after a truncation: snapshots past the
// new end are deleted, and the state is the newest remaining snapshot plus
// the batches after it. A transaction whose marker was cut off is open
// again, a producer keeps the epoch of its last marker still in the log,
// and the window holds the batches that are left. The aborted-transaction
// index needs no restore (the log trimmed it with the segment). Snapshots
// are held off meanwhile, so none is written from the state before.
func (s *State) RebuildTruncated(fsys vfs.FS, l *log.Log) error {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	ns := NewState()
	if err := ns.rebuild(fsys, l, 0, 0, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.producers, s.ongoing = ns.producers, ns.ongoing
	s.end, s.snapEnd = ns.end, ns.snapEnd
	s.decided = ns.decided
	s.nDecided.Store(int64(len(s.decided)))
	s.recomputeLocked()
	return nil
}

// rebuild is Rebuild; restore puts lost index entries back (it takes the
// log's append lock, so not for a rebuild under it).
func (s *State) rebuild(fsys vfs.FS, l Source, nowMs, expirationMs int64, restore bool) error {
	from, err := s.LoadSnapshot(fsys, l.Dir(), l.LogStartOffset(), l.LogEndOffset(), nowMs, expirationMs)
	if err != nil {
		return err
	}
	var rerr error
	err = l.ScanBatches(from, func(h batch.Header, _ log.BatchPosition) bool {
		if h.BaseOffset < from {
			return true
		}
		if !h.IsControl() {
			s.Replay(h)
			return true
		}
		if h.ProducerID < 0 {
			return true
		}
		b, err := l.ReadBytesToEnd(h.BaseOffset, h.TotalSize())
		if err != nil {
			rerr = err
			return false
		}
		if len(b) < h.TotalSize() {
			// Never skipped: a marker not replayed would leave its
			// transaction open (and a later abort would index it from
			// its first offset, over committed transactions).
			rerr = fmt.Errorf("producer state: reading the control batch at offset %d: %d of %d bytes", h.BaseOffset, len(b), h.TotalSize())
			return false
		}
		m, err := batch.ParseMarker(b, markerMaxDecompressed)
		if err != nil {
			return true // not a transaction marker: nothing to replay
		}
		txn, lso, ok := s.ReplayMarker(m, h.BaseOffset)
		if ok && txn.Aborted && restore {
			// The index entry may have been lost in a crash.
			if err := l.RestoreAbortedTxn(log.AbortedTxn{ProducerID: txn.ProducerID, FirstOffset: txn.FirstOffset,
				LastOffset: txn.LastOffset, LastStableOffset: lso}); err != nil {
				rerr = err
				return false
			}
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	return err
}

// markerMaxDecompressed bounds reading a marker batch (a few bytes).
const markerMaxDecompressed = 1 << 20
