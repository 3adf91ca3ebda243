package log

import "github.com/sluice-broker/sluice/internal/vfs"

// Flushing. Two levels:
//
//   - durable (syncTo): the .log data below it is fsynced. flush.messages
//     waits for this. Appenders that need it queue on syncMu; whoever gets
//     the lock fsyncs everything appended so far, so one fsync covers every
//     appender that was waiting (group commit).
//   - recovery point (flushUpTo): data and indexes below it are fsynced; it
//     is checkpointed, and recovery after a crash re-validates only from it.
//     Flush, flush.ms, housekeeping after a roll, and Close move it.
//
// Segment data is made durable with fdatasync (datasync), not fsync: .log
// files only grow by appends after creation, and fdatasync covers the data
// and the file size, which is all recovery reads; only the modification
// time may be stale after a power loss (retention falls back to it only for
// segments without timestamps). Creating a segment still fsyncs the file
// and its directory, and truncation still fsyncs.

// syncTo returns once every record below offset is durable.
func (l *Log) syncTo(offset int64) error {
	if l.durable.Load() >= offset {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.durable.Load() >= offset {
		return nil
	}
	if se := l.failed.Load(); se != nil {
		return se
	}
	end := l.leo.Load() // everything below end is written (published after the write)
	from := l.durable.Load()
	for _, s := range l.segments() {
		if s.next.Load() <= from && !s.dirty.Load() {
			continue
		}
		if s.dirty.Swap(false) {
			if err := vfs.Datasync(s.log); err != nil {
				if l.retired(s) {
					continue // deleted or replaced meanwhile; its file may be closed
				}
				s.dirty.Store(true)
				return l.fail("fsync", err)
			}
		}
	}
	l.advanceDurable(end)
	return nil
}

// WaitDurable returns once every record below offset is durable (fsyncing
// if nobody else is), or with the error that keeps them from being so. It
// completes an Append made with AppendOptions.DeferSync.
func (l *Log) WaitDurable(offset int64) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	return l.syncTo(offset)
}

// retired reports whether s has left the log's segment list (retention,
// DeleteRecords, truncation or a compaction swap) since a caller took its
// snapshot: its files may already be closed, and its data is either gone on
// purpose or durable in the segment that replaced it.
func (l *Log) retired(s *segment) bool {
	for _, cur := range l.segments() {
		if cur == s {
			return false
		}
	}
	return true
}

func (l *Log) advanceDurable(end int64) {
	for {
		cur := l.durable.Load()
		if cur >= end || l.durable.CompareAndSwap(cur, end) {
			break
		}
	}
	l.lastFlushMs.Store(l.m.now().UnixMilli())
}

// flushUpTo fsyncs data and indexes of every segment below offset and moves
// the recovery point there.
func (l *Log) flushUpTo(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if se := l.failed.Load(); se != nil {
		return se
	}
	for _, s := range l.segments() {
		if s.base >= offset {
			break
		}
		if s.dirty.Swap(false) {
			if err := vfs.Datasync(s.log); err != nil {
				if l.retired(s) {
					continue // deleted or replaced meanwhile; its file may be closed
				}
				s.dirty.Store(true)
				return l.fail("fsync", err)
			}
		}
		if s.idxDirty.Swap(false) {
			for _, ix := range []struct {
				f    *indexFile
				what string
			}{{s.idx, "fsync index"}, {s.tidx, "fsync time index"}} {
				if err := ix.f.sync(); err != nil {
					if l.retired(s) {
						break
					}
					s.idxDirty.Store(true)
					return l.fail(ix.what, err)
				}
			}
		}
	}
	l.advanceDurable(offset)
	for {
		cur := l.recoveryPoint.Load()
		if cur >= offset {
			break
		}
		if l.recoveryPoint.CompareAndSwap(cur, offset) {
			l.checkpointChanged()
			break
		}
	}
	return nil
}

// Flush makes everything appended so far durable, indexes included, and
// moves the recovery point to the log end offset.
func (l *Log) Flush() error {
	if !l.Loaded() {
		return nil // nothing was written since the clean shutdown
	}
	return l.flushUpTo(l.leo.Load())
}

// housekeepFlush runs flush.ms and the deferred flush of rolled segments.
func (l *Log) housekeepFlush(nowMs int64) error {
	cfg := l.config()
	leo := l.leo.Load()
	rp := l.recoveryPoint.Load()
	if leo <= rp {
		return nil
	}
	if (cfg.FlushMs != maxInt64 && nowMs-l.lastFlushMs.Load() >= cfg.FlushMs) || l.durable.Load() > rp {
		return l.flushUpTo(leo)
	}
	if ab := l.active().base; ab > rp {
		return l.flushUpTo(ab)
	}
	return nil
}

const maxInt64 = 1<<63 - 1

// close flushes and closes the log's files (Manager.Close).
func (l *Log) close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	// Final time-index entry for the active segment, as Kafka writes on
	// close (it marks the indexes dirty when it adds one). An idle log has
	// nothing to sync: closing it costs no fsync.
	if err := l.active().maybeAppendTimeEntry(); err != nil {
		l.logger().Warn("final time index entry not written", "dir", l.dir, "err", err)
	}
	l.trimReservedLocked(l.active())
	l.closed = true
	l.mu.Unlock()
	l.notify()
	return l.Flush()
}

// closeFiles closes every segment's files.
func (l *Log) closeFiles() {
	p := l.segs.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		s.close()
	}
}
