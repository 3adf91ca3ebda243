package log

// What flush.messages asked for, remembered. Every append that reaches
// flush.messages records, under the append lock, the offset it must be
// durable to (syncDue), then fsyncs (or leaves the fsync to its caller
// with DeferSync). A replica reports its log end offset to the leader in
// its next Fetch, and that position moves the leader's high watermark,
// which acknowledges acks=all writes: SyncedEnd gives a log end offset
// below which everything flush.messages asked to be durable is, even when
// the fsync of the append that asked failed (the log is failed then) or
// still runs on another goroutine.

// noteSyncDue records that flush.messages asked for every record below
// next to be durable (l.mu held).
func (l *Log) noteSyncDue(next int64) {
	for {
		cur := l.syncDue.Load()
		if cur >= next || l.syncDue.CompareAndSwap(cur, next) {
			return
		}
	}
}

// SyncedEnd returns the log end offset once every record below it that
// flush.messages asked to be durable is (fsyncing if nobody else is): with
// flush.messages=1 every record below it, with N every record up to the
// last append that reached N unflushed messages, with the default (never
// forced) nothing is waited for. A failed log returns its error: records
// above its durable offset may be lost, so no position beyond it may be
// reported as held.
func (l *Log) SyncedEnd() (int64, error) {
	if se := l.failed.Load(); se != nil {
		return -1, se
	}
	// A log still unloaded since a clean start has appended nothing (no
	// sync is due) and knows its end without being read.
	leo := l.LogEndOffset()
	if l.config().FlushMessages != maxInt64 {
		// The append that published leo decided, under l.mu, whether
		// flush.messages asks for an fsync: wait until it has.
		l.mu.Lock()
		l.mu.Unlock()
		if due := min(l.syncDue.Load(), leo); l.durable.Load() < due {
			if err := l.syncTo(due); err != nil {
				return -1, err
			}
		}
	}
	if se := l.failed.Load(); se != nil {
		return -1, se
	}
	return leo, nil
}
