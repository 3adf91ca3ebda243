package log

// deleteOldSegments applies retention with Kafka's rules: segments are
// deleted whole, oldest first, while they are (with cleanup.policy
// containing delete) older than retention.ms by their largest timestamp, or
// while the log exceeds retention.bytes by at least their size, or (any
// policy) while they lie wholly below the log start offset. The active
// segment qualifies too; it is rolled first so an empty active segment
// remains. The log start offset moves to the first remaining segment.
func (l *Log) deleteOldSegments(nowMs int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	cfg := l.config()
	segs := l.segments()
	start := l.logStart.Load()
	del := 0
	// Below the log start offset (DeleteRecords): Kafka's test is on the
	// next segment's base, so the active segment never matches here.
	for i := 0; i+1 < len(segs) && segs[i+1].base <= start; i++ {
		del = i + 1
	}
	if cfg.DeleteRetention {
		if cfg.RetentionMs >= 0 {
			for i, s := range segs {
				if s.size.Load() == 0 {
					break
				}
				ts := s.maxTs.Load()
				if ts < 0 {
					ts = l.lastModifiedMs(s)
				}
				if nowMs-ts <= cfg.RetentionMs {
					break
				}
				del = max(del, i+1)
			}
		}
		if cfg.RetentionBytes >= 0 {
			diff := l.sizeOf(segs) - cfg.RetentionBytes
			for i, s := range segs {
				sz := s.size.Load()
				if sz == 0 || diff-sz < 0 {
					break
				}
				diff -= sz
				del = max(del, i+1)
			}
		}
	}
	if del == 0 {
		return nil
	}
	if del == len(segs) {
		// Deleting the active segment: roll so an empty one remains.
		if err := l.rollLocked(nowMs); err != nil {
			return err
		}
		segs = l.segments()
	}
	return l.dropPrefixLocked(segs, del)
}

// dropPrefixLocked retires segs[:n] and moves the log start offset.
func (l *Log) dropPrefixLocked(segs []*segment, n int) error {
	if n <= 0 {
		return nil
	}
	gone := segs[:n]
	rest := append([]*segment(nil), segs[n:]...)
	l.setSegments(rest)
	newStart := max(l.logStart.Load(), rest[0].base)
	l.logStart.Store(newStart)
	l.checkpointChanged()
	l.retireSegmentsLocked(gone)
	l.logger().Info("deleted segments", "dir", l.dir, "count", n, "log_start_offset", newStart)
	if l.epochs.truncateFromStart(newStart) {
		if err := l.epochs.store(l.fs, l.dir); err != nil {
			l.logger().Error("cannot write leader-epoch-checkpoint", "dir", l.dir, "err", err)
		}
	}
	if t, ok := l.guard.(ProducerGuardTruncator); ok {
		t.Truncated(newStart, l.leo.Load())
	}
	return nil
}

func (l *Log) lastModifiedMs(s *segment) int64 {
	fi, err := s.log.Stat()
	if err != nil {
		return s.createdMs.Load()
	}
	return fi.ModTime().UnixMilli()
}

func (l *Log) sizeOf(segs []*segment) int64 {
	var n int64
	for _, s := range segs {
		n += s.size.Load()
	}
	return n
}

// TruncatePrefix moves the log start offset to offset (DeleteRecords):
// reads below it fail, whole segments below it are deleted, and the new
// start offset is checkpointed before TruncatePrefix returns. An offset at
// or below the current start is a no-op; above the high watermark it is
// *OffsetOutOfRangeError.
func (l *Log) TruncatePrefix(offset int64) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	leo := l.leo.Load()
	start := l.logStart.Load()
	if offset > leo || offset < 0 {
		l.mu.Unlock()
		return &OffsetOutOfRangeError{Offset: offset, LogStartOffset: start, LogEndOffset: leo}
	}
	if offset <= start {
		l.mu.Unlock()
		return nil
	}
	l.logStart.Store(offset)
	l.checkpointChanged()
	segs := l.segments()
	n := 0
	for i := 0; i < len(segs); i++ {
		if segs[i].next.Load() <= offset && segs[i].size.Load() > 0 {
			n = i + 1
		} else {
			break
		}
	}
	var err error
	if n == len(segs) {
		if err = l.rollLocked(l.m.now().UnixMilli()); err == nil {
			segs = l.segments()
		} else {
			n--
		}
	}
	if n > 0 {
		err = l.dropPrefixLocked(segs, n)
	} else if l.epochs.truncateFromStart(offset) {
		err = l.epochs.store(l.fs, l.dir)
	}
	if t, ok := l.guard.(ProducerGuardTruncator); ok && n == 0 {
		t.Truncated(offset, leo)
	}
	l.mu.Unlock()
	l.notify()
	if cerr := l.m.writeCheckpoints(false); err == nil {
		err = cerr
	}
	return err
}
