package log

import "time"

// Housekeeping runs every second, but the data-dir checkpoints follow
// Apache Kafka's cadence: the recovery-point checkpoint at most every
// log.flush.offset.checkpoint.interval.ms and the log-start checkpoint at
// most every log.flush.start.offset.checkpoint.interval.ms (60 s each by
// default), and neither when no log's value moved since the last write
// (ckGen). With many partitions, each write renders every partition, so
// writing them every second while partitions are created or written cost
// CPU in proportion to the partitions. A crash loses nothing: a recovery
// point behind the log only makes the next start recover more, and the
// operations that must not be undone (TruncatePrefix, a suffix
// truncation, Close) still write at once.

// due reports whether a checkpoint last compared at last is due again at
// now, every interval (0: always).
func (m *Manager) due(last time.Time, interval time.Duration, now time.Time) bool {
	return interval <= 0 || last.IsZero() || now.Sub(last) >= interval || now.Before(last)
}
