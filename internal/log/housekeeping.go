package log

import "time"

func (m *Manager) housekeepingLoop(every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.RunHousekeeping()
		}
	}
}

// RunHousekeeping does one pass of the background work for every log:
// time-based roll (segment.ms), retention (retention.ms, retention.bytes,
// segments below the log start offset), flush.ms and the deferred flush of
// rolled segments, due delayed file deletions, and the checkpoint files. The
// housekeeping goroutine calls it on every tick; tests with a fake clock
// call it directly.
func (m *Manager) RunHousekeeping() {
	m.hkMu.Lock()
	defer m.hkMu.Unlock()
	nowMs := m.now().UnixMilli()
	for _, l := range m.allLogs() {
		if err := l.housekeep(nowMs); err != nil {
			l.logger.Error("housekeeping failed", "dir", l.dir, "err", err)
		}
	}
	m.runDeletes(false)
	if err := m.writeCheckpoints(false); err != nil {
		m.logger.Error("cannot write checkpoints", "dir", m.dir, "err", err)
	}
}

func (l *Log) housekeep(nowMs int64) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	cfg := l.config()
	var err error
	if l.dueByTime(l.active(), cfg, nowMs) {
		err = l.rollLocked(nowMs)
	}
	l.mu.Unlock()
	if err2 := l.deleteOldSegments(nowMs); err == nil {
		err = err2
	}
	if err2 := l.housekeepFlush(nowMs); err == nil {
		err = err2
	}
	return err
}
