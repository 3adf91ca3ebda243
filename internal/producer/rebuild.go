package producer

import (
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// Rebuild brings s up to date with the partition log l after it was opened:
// it loads the newest usable snapshot in l's directory (see LoadSnapshot)
// and replays the headers of every batch written after it. Call it before
// the log takes appends. Without snapshots the whole log is scanned (headers
// only, plus the transaction markers, whose aborted transactions are put
// back into the log's aborted-transaction index if a crash lost them).
func (s *State) Rebuild(fsys log.FS, l *log.Log, nowMs, expirationMs int64) error {
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
		b, err := l.ReadBytes(h.BaseOffset, h.TotalSize())
		if err != nil {
			rerr = err
			return false
		}
		m, err := batch.ParseMarker(b, markerMaxDecompressed)
		if err != nil {
			return true // not a transaction marker: nothing to replay
		}
		txn, lso, ok := s.ReplayMarker(m, h.BaseOffset)
		if ok && txn.Aborted {
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
