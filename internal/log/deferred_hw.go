package log

// A high watermark set on a log deferred after an unclean shutdown. Its
// offsets are unknown until it is recovered, and every reader of them
// (HighWatermark, LogEndOffset, a fetch, ...) loads it first. Setting its
// high watermark — which the partition layer does for every partition when
// the broker's role changes, e.g. when a restarted broker is fenced and
// unfenced — therefore does not load it: the call is kept and applied when
// the log is loaded, before anyone can read the result. So becoming leader
// of many partitions after a crash recovers none of them; each is recovered
// on first use or by the background loader, as before the role change.

// deferHighWatermark keeps SetHighWatermark(offset) for the load when the log
// is still deferred with unknown offsets; it reports whether it did (false:
// the log's offsets are known, set it now).
func (l *Log) deferHighWatermark(offset int64) bool {
	if !l.offsetsUnknown || l.segsLoaded.Load() {
		return false
	}
	d := l.deferred.Load()
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return false // loaded meanwhile (or failed: then nothing to keep)
	}
	if !d.hwSet || offset > d.hwOffset {
		d.hwOffset = offset
	}
	d.hwSet = true
	return true
}

// dropDeferredHighWatermark forgets a kept SetHighWatermark: the caller
// (FollowLogEnd, ForgetHighWatermark) replaces the high watermark's state.
// A kept value is below or at the log end, so following the end after it
// shows the same, and forgetting it discards it.
func (l *Log) dropDeferredHighWatermark() {
	if !l.offsetsUnknown {
		return
	}
	d := l.deferred.Load()
	if d == nil {
		return
	}
	// (A load under way holds d.mu until it has applied the kept value, so
	// the caller's change always comes after it.)
	d.mu.Lock()
	d.hwSet = false
	d.mu.Unlock()
}

// applyDeferredHighWatermark runs in the load (d.mu held) once the log is
// recovered: the kept SetHighWatermark takes effect as it would have had
// the log been loaded when it was called.
func (l *Log) applyDeferredHighWatermark(d *deferredLoad) {
	if d.hwSet {
		d.hwSet = false
		l.setHighWatermark(d.hwOffset)
	}
}

// FreezeHighWatermark stops the high watermark from following the log end
// where it is now (SetHighWatermark(HighWatermark()), without loading a log
// deferred after an unclean shutdown: there "now" is its recovered end).
func (l *Log) FreezeHighWatermark() {
	if l.deferHighWatermark(-1) {
		return
	}
	l.setHighWatermark(-1)
}

// OffsetsKnown reports whether the log's offsets can be read without
// loading it: false while it is deferred after an unclean shutdown and not
// recovered yet (then LogEndOffset, HighWatermark, ... recover it first).
func (l *Log) OffsetsKnown() bool { return !l.offsetsUnknown || l.segsLoaded.Load() }
