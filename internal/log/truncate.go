package log

import (
	"encoding/binary"
	"fmt"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// TruncateTo removes every record at or after offset (suffix truncation,
// for replication). Truncation happens at batch boundaries: if offset falls
// inside a batch, that whole batch goes and the log end offset becomes the
// batch's base offset (offsets stay dense). An offset at or past the log
// end is a no-op; one below the log start offset empties the log and
// restarts it at offset, as Kafka's truncate-fully does.
func (l *Log) TruncateTo(offset int64) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("log: truncate to negative offset %d", offset)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	leo := l.leo.Load()
	if offset >= leo {
		l.mu.Unlock()
		return nil
	}
	newLEO, err := l.truncateLocked(offset)
	if err == nil && l.epochs.truncateFromEnd(newLEO) {
		err = l.epochs.store(l.fs, l.dir)
	}
	rebuilt := false
	if rb, ok := l.guard.(ProducerGuardRebuilder); ok && err == nil {
		if rerr := rb.RebuildTruncated(l.fs, l); rerr != nil {
			l.logger().Error("cannot rebuild producer state after truncation; trimming it instead", "dir", l.dir, "err", rerr)
		} else {
			rebuilt = true
		}
	}
	if t, ok := l.guard.(ProducerGuardTruncator); ok && !rebuilt {
		t.Truncated(l.logStart.Load(), l.leo.Load())
	}
	l.mu.Unlock()
	l.notify()
	// The recovery point may have moved back: checkpoint it now, or a crash
	// could skip re-validating what gets appended next.
	if cerr := l.m.writeCheckpoints(false); err == nil {
		err = cerr
	}
	return err
}

// ProducerGuardRebuilder is optionally implemented by a ProducerGuard
// that rebuilds its state from the log after a suffix truncation (Kafka
// reloads its producer state then: a transaction whose marker was cut off
// is open again). RebuildTruncated runs under the append lock, after the
// new end is published; it may read the log (ScanBatches, ReadBytes,
// LogStartOffset, LogEndOffset, Dir) but must not call what takes the
// lock. When it succeeds, ProducerGuardTruncator.Truncated is not called.
type ProducerGuardRebuilder interface {
	RebuildTruncated(fsys vfs.FS, l *Log) error
}

func (l *Log) truncateLocked(offset int64) (int64, error) {
	segs := l.segments()
	start := l.logStart.Load()
	if offset <= start || offset < segs[0].base {
		return offset, l.truncateFullyLocked(offset)
	}
	i := segmentFor(segs, offset)
	s := segs[i]
	limit := s.size.Load()
	pos, h, ok, err := s.locate(offset, limit)
	if err != nil {
		return 0, storageErr("truncate", err)
	}
	cut, newLEO := limit, offset
	if ok {
		cut = pos
		newLEO = min(offset, h.base)
	}
	if newLEO < start || newLEO < s.base {
		return offset, l.truncateFullyLocked(offset)
	}
	l.retireSegmentsLocked(segs[i+1:])
	l.setSegments(append([]*segment(nil), segs[:i+1]...))
	if err := s.truncate(cut, newLEO, l.m.now().UnixMilli()); err != nil {
		l.fail("truncate", err)
		return 0, storageErr("truncate", err)
	}
	if err := s.truncateTxnIndex(l.fs, newLEO); err != nil {
		l.fail("truncate", err)
		return 0, storageErr("truncate", err)
	}
	// Make the cut durable, or a crash could bring truncated records back.
	if err := s.log.Sync(); err != nil {
		l.fail("truncate", err)
		return 0, storageErr("truncate", err)
	}
	l.publishEnd(newLEO)
	return newLEO, nil
}

// truncateFullyLocked deletes every segment and restarts the log, empty,
// at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	old := l.segments()
	l.retireSegmentsLocked(old)
	s, err := createSegment(l.fs, l.m.files, l.dir, offset, l.m.now().UnixMilli())
	if err != nil {
		l.fail("truncate fully", err)
		return storageErr("truncate", err)
	}
	l.setSegments([]*segment{s})
	l.logStart.Store(offset)
	l.checkpointChanged()
	l.publishEnd(offset)
	l.epochs.truncateFromEnd(offset)
	l.epochs.truncateFromStart(offset)
	return nil
}

// publishEnd sets a lower log end offset after a truncation.
func (l *Log) publishEnd(leo int64) {
	l.leo.Store(leo)
	l.endFloor.note(leo)
	if l.hw.Load() > leo {
		l.hw.Store(leo)
	}
	if l.durable.Load() > leo {
		l.durable.Store(leo)
	}
	if l.recoveryPoint.Load() > leo {
		l.recoveryPoint.Store(leo)
		l.checkpointChanged()
	}
	l.unflushedMsgs = 0
	for _, s := range l.segments() {
		s.hint.Store(0)
	}
}

// truncate cuts the segment's .log at pos (a batch boundary) with next
// offset next, trims both indexes and recomputes the largest timestamp.
func (s *segment) truncate(pos, next int64, nowMs int64) error {
	s.size.Store(min(s.size.Load(), pos))
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	s.reserved = 0 // the cut gave back every block past pos
	var e [timeIndexEntrySize]byte
	n, err := s.idx.floorIndex(next-1-s.base, offsetEntryKey, e[:])
	if err != nil {
		return err
	}
	if err := s.idx.truncateEntries(n + 1); err != nil {
		return err
	}
	tn, err := s.tidx.floorIndex(next-1-s.base, func(b []byte) int64 { return int64(binary.BigEndian.Uint32(b[8:12])) }, e[:])
	if err != nil {
		return err
	}
	if err := s.tidx.truncateEntries(tn + 1); err != nil {
		return err
	}
	s.next.Store(next)
	s.maxTs.Store(-1)
	s.maxTsOffset.Store(s.base - 1)
	if last := s.tidx.lastEntry(); last != nil {
		s.maxTs.Store(timeEntryKey(last))
		s.maxTsOffset.Store(s.base + int64(binary.BigEndian.Uint32(last[8:12])))
	}
	from := int64(0)
	if last := s.idx.lastEntry(); last != nil {
		from = int64(binary.BigEndian.Uint32(last[4:8]))
	}
	s.bytesSinceIndex = 0
	var buf [batch.HeaderSize]byte
	for p := from; p < pos; {
		h, ok, err := readHdr(s.log, p, pos, &buf)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if h.maxTs > s.maxTs.Load() {
			s.maxTs.Store(h.maxTs)
			s.maxTsOffset.Store(h.lastOffset)
		}
		s.bytesSinceIndex += h.size
		p += h.size
	}
	if pos == 0 {
		s.rollTs.Store(-1)
		s.createdMs.Store(nowMs)
	}
	s.dirty.Store(true)
	s.idxDirty.Store(true)
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset: a
// follower whose log ends below its leader's log start (retention or
// DeleteRecords removed what it misses) continues from the leader's start,
// as Kafka's truncateFullyAndStartAt does. The high watermark is at least
// offset afterwards.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("log: restart at negative offset %d", offset)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	err := l.truncateFullyLocked(offset)
	if err == nil {
		if l.hw.Load() < offset {
			l.hw.Store(offset)
		}
		l.durable.Store(offset)
		l.recoveryPoint.Store(offset)
		l.checkpointChanged()
		err = l.epochs.store(l.fs, l.dir)
	}
	if t, ok := l.guard.(ProducerGuardTruncator); ok {
		t.Truncated(l.logStart.Load(), l.leo.Load())
	}
	l.mu.Unlock()
	l.notify()
	if cerr := l.m.writeCheckpoints(false); err == nil {
		err = cerr
	}
	return err
}
