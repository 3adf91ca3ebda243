package producer

import (
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// Rebuild brings s up to date with the partition log l after it was opened:
// it loads the newest usable snapshot in l's directory (see LoadSnapshot)
// and replays the headers of every batch written after it. Call it before
// the log takes appends. Without snapshots the whole log is scanned (headers
// only).
func (s *State) Rebuild(fsys log.FS, l *log.Log, nowMs, expirationMs int64) error {
	from, err := s.LoadSnapshot(fsys, l.Dir(), l.LogStartOffset(), l.LogEndOffset(), nowMs, expirationMs)
	if err != nil {
		return err
	}
	return l.ScanBatches(from, func(h batch.Header, _ log.BatchPosition) bool {
		if h.BaseOffset >= from {
			s.Replay(h)
		}
		return true
	})
}
