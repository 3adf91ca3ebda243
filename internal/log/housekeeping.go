package log

import "time"

// retentionInitialDelay is how long after start the first retention check
// runs when log.retention.check.interval.ms is longer: Kafka schedules its
// retention task with a 30 s initial delay too.
const retentionInitialDelay = 30 * time.Second

func (m *Manager) housekeepingLoop(every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	interval := m.opts.RetentionCheckInterval
	nextRetention := time.Now().Add(min(interval, retentionInitialDelay))
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			retention := !now.Before(nextRetention)
			if retention {
				nextRetention = now.Add(interval)
			}
			m.runHousekeeping(retention)
		}
	}
}

// RunHousekeeping does one pass of the background work for every log:
// time-based roll (segment.ms), retention (retention.ms, retention.bytes,
// segments below the log start offset), flush.ms and the deferred flush of
// rolled segments, due delayed file deletions, and the checkpoint files. The
// housekeeping goroutine runs the same pass on every tick, with retention
// only every RetentionCheckInterval (log.retention.check.interval.ms);
// tests with a fake clock call RunHousekeeping directly, which always
// applies retention.
func (m *Manager) RunHousekeeping() { m.runHousekeeping(true) }

func (m *Manager) runHousekeeping(retention bool) {
	m.hkMu.Lock()
	defer m.hkMu.Unlock()
	nowMs := m.now().UnixMilli()
	for _, l := range m.allLogs() {
		if err := l.housekeep(nowMs, retention); err != nil {
			l.logger().Error("housekeeping failed", "dir", l.dir, "err", err)
		}
	}
	m.runDeletes(false)
	if err := m.writeCheckpointsWhen(false, true); err != nil {
		m.logger.Error("cannot write checkpoints", "dir", m.dir, "err", err)
	}
	m.hkPasses.Add(1)
}

// HousekeepingPasses is how many housekeeping passes have run.
func (m *Manager) HousekeepingPasses() int64 { return m.hkPasses.Load() }

func (l *Log) housekeep(nowMs int64, retention bool) error {
	if !l.Loaded() {
		// Not read since a clean start: nothing was appended, nothing
		// needs flushing. Retention needs the segments: a retention pass
		// loads it (the broker's background loader usually has already).
		if !retention {
			return nil
		}
		if err := l.ensureLoaded(); err != nil {
			return err
		}
	}
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
	if retention {
		if err2 := l.deleteOldSegments(nowMs); err == nil {
			err = err2
		}
	}
	if err2 := l.housekeepFlush(nowMs); err == nil {
		err = err2
	}
	return err
}
