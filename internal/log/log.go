package log

import (
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// Log is one partition's log. All methods are safe for concurrent use.
// Appends, rolls, truncations and retention serialise on the append lock;
// reads take no lock: they work on an immutable snapshot of the segment list
// and on atomically published end offsets, so they never block appends.
type Log struct {
	m         *Manager
	fs        vfs.FS
	dir       string
	topic     string
	partition int32

	cfg      atomic.Pointer[Config]
	jitterMs atomic.Int64

	endFloor endFloor // lowest end since the cleaner last looked (end_floor.go)

	mu    sync.Mutex                 // the append lock
	segs  atomic.Pointer[[]*segment] // sorted by base offset; last is active; replaced, never mutated
	guard ProducerGuard              // (mu)
	// txnGuard is guard when it implements TxnGuard (read lock-free for
	// the last stable offset), else nil.
	txnGuard atomic.Pointer[TxnGuard]
	closed   bool // (mu)
	// unflushedMsgs counts records appended since the last forced sync (mu).
	unflushedMsgs int64

	leo atomic.Int64 // log end offset, published after the data is readable
	// hw is the high watermark once replication sets it (SetHighWatermark);
	// while hwFollowsEnd is set (a new log, or FollowLogEnd) it is the log
	// end offset instead and hw is not read.
	hw            atomic.Int64
	hwFollowsEnd  atomic.Bool
	logStart      atomic.Int64
	recoveryPoint atomic.Int64 // everything below is durable, indexes included
	durable       atomic.Int64 // everything below has durable .log data (acks)
	lastFlushMs   atomic.Int64 // when data was last made durable (flush.ms)
	failed        atomic.Pointer[StorageError]
	// syncDue is the highest offset flush.messages asked to be durable
	// (sync_due.go).
	syncDue atomic.Int64

	syncMu sync.Mutex // one fsync at a time; waiters share it (group commit)

	epochs epochCache

	// deferred is set while the log's directory has not been read yet
	// (deferred.go); wasDeferred says it was entered that way.
	deferred    atomic.Pointer[deferredLoad]
	wasDeferred bool
	// offsetsUnknown: deferred after an unclean shutdown, its end offset
	// is known only once recovered; segsLoaded: the directory was read
	// (set before OnLoad runs, while deferred is still set).
	offsetsUnknown bool
	segsLoaded     atomic.Bool

	waitMu     sync.Mutex
	waitCh     chan struct{}
	hasWaiters atomic.Bool
}

func (l *Log) config() *Config { return l.cfg.Load() }

func (l *Log) segments() []*segment {
	p := l.segs.Load()
	if p == nil {
		return nil // not loaded (deferred.go)
	}
	return *p
}

func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

func (l *Log) setSegments(s []*segment) {
	sort.Slice(s, func(i, j int) bool { return s[i].base < s[j].base })
	l.segs.Store(&s)
}

func (l *Log) nowMs(t time.Time) int64 {
	if t.IsZero() {
		t = l.m.now()
	}
	return t.UnixMilli()
}

// Topic is the log's topic.
func (l *Log) Topic() string { return l.topic }

// Partition is the log's partition.
func (l *Log) Partition() int32 { return l.partition }

// Dir is the log's directory, <data-dir>/<topic>-<partition>.
func (l *Log) Dir() string { return l.dir }

// HighWatermark is the offset up to which records are visible to consumers.
// It is kept apart from the log end offset: the partition layer sets it
// (SetHighWatermark) once the in-sync replicas hold the records. A log
// whose in-sync set is this replica alone follows its end instead
// (FollowLogEnd, the state of a new log): a record is visible as soon as it
// is appended, as in Kafka with one in-sync replica (durability is the flush
// policy's business).
func (l *Log) HighWatermark() int64 {
	l.needOffsets()
	if l.hwFollowsEnd.Load() {
		return l.leo.Load()
	}
	return min(l.hw.Load(), l.leo.Load())
}

// SetHighWatermark stores the high watermark the partition layer computed
// (the minimum log end offset over the in-sync replicas). It is clamped to
// [log start, log end] and never moves back: only a truncation lowers it.
// The first call stops the high watermark from following the log end; the
// value then starts where it was.
func (l *Log) SetHighWatermark(offset int64) {
	// A log deferred after an unclean shutdown is not loaded for this: its
	// high watermark is unknown until it is recovered (every reader of it
	// loads the log first), so the call is kept and applied by the load
	// (deferred_hw.go). Becoming a partition's leader thus recovers nothing.
	if l.deferHighWatermark(offset) {
		return
	}
	l.setHighWatermark(offset)
}

// setHighWatermark is SetHighWatermark on a log whose offsets are known.
func (l *Log) setHighWatermark(offset int64) {
	l.mu.Lock()
	cur := l.leo.Load()
	if !l.hwFollowsEnd.Load() {
		cur = min(l.hw.Load(), cur)
	}
	if l.hwFollowsEnd.Load() {
		l.hw.Store(cur)
		l.hwFollowsEnd.Store(false)
	}
	offset = min(max(offset, l.logStart.Load()), l.leo.Load())
	moved := offset > cur
	if moved {
		l.hw.Store(offset)
	}
	l.mu.Unlock()
	if moved {
		l.forgetDecided(offset)
		l.notify()
	}
}

// forgetDecided lets an UndecidedTxnGuard forget the transactions whose
// marker is now below the high watermark hw (else, on a replica whose last
// stable offset nobody asks for, they would pile up).
func (l *Log) forgetDecided(hw int64) {
	if g := l.txnGuard.Load(); g != nil {
		if ug, ok := (*g).(UndecidedTxnGuard); ok {
			ug.FirstUndecidedOffset(hw)
		}
	}
}

// ForgetHighWatermark lowers the high watermark to the log start offset and
// stops it following the log end: a replicated partition whose high
// watermark is not known after a start (it is not checkpointed) exposes
// nothing above what the in-sync replicas confirm again. Only for a log
// no consumer has read from since it was opened.
func (l *Log) ForgetHighWatermark() {
	l.dropDeferredHighWatermark()
	l.mu.Lock()
	l.hwFollowsEnd.Store(false)
	l.hw.Store(l.logStart.Load())
	l.mu.Unlock()
}

// FollowLogEnd makes the high watermark the log end offset from now on (the
// in-sync set is this replica alone). The high watermark never moves back,
// so records between the kept high watermark and the end become visible.
func (l *Log) FollowLogEnd() {
	l.dropDeferredHighWatermark()
	l.mu.Lock()
	was := l.hwFollowsEnd.Swap(true)
	l.mu.Unlock()
	if !was {
		l.notify()
	}
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.needOffsets()
	return l.leo.Load()
}

// LogStartOffset is the first offset a reader may ask for.
func (l *Log) LogStartOffset() int64 {
	l.needOffsets()
	return l.logStart.Load()
}

// RecoveryPoint is the offset below which data and indexes are durable.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Config returns the log's current config.
func (l *Log) Config() Config { return *l.config() }

// SetConfig changes the config live. An invalid config is rejected.
// New limits apply to the next append; roll and retention changes at the
// next housekeeping pass.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	old := l.cfg.Swap(&cfg)
	if old == nil || old.SegmentJitterMs != cfg.SegmentJitterMs {
		j := int64(0)
		if cfg.SegmentJitterMs > 0 {
			j = rand.Int64N(cfg.SegmentJitterMs)
		}
		l.jitterMs.Store(j)
	}
	return nil
}

// RollJitterMs is the random amount this log subtracts from segment.ms
// (drawn from [0, segment.jitter.ms)).
func (l *Log) RollJitterMs() int64 { return l.jitterMs.Load() }

// SetProducerGuard installs the idempotence seam (nil restores the no-op).
func (l *Log) SetProducerGuard(g ProducerGuard) {
	if g == nil {
		g = noopGuard{}
	}
	l.mu.Lock()
	l.guard = g
	if tg, ok := g.(TxnGuard); ok {
		l.txnGuard.Store(&tg)
	} else {
		l.txnGuard.Store(nil)
	}
	l.mu.Unlock()
}

// Size is the total size of the segment files' data in bytes.
func (l *Log) Size() int64 {
	if l.ensureLoaded() != nil {
		return 0
	}
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	if l.ensureLoaded() != nil {
		return nil
	}
	segs := l.segments()
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		out[i] = SegmentInfo{
			BaseOffset:       s.base,
			NextOffset:       s.next.Load(),
			Size:             s.size.Load(),
			Created:          time.UnixMilli(s.createdMs.Load()),
			LargestTimestamp: s.maxTs.Load(),
			Active:           i == len(segs)-1,
		}
	}
	return out
}

// Wait returns a channel closed on the next append, high-watermark move or
// truncation. Call it
// before checking for new data (then a change between the check and the
// wait is not missed).
func (l *Log) Wait() <-chan struct{} {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	if l.waitCh == nil {
		l.waitCh = make(chan struct{})
	}
	l.hasWaiters.Store(true)
	return l.waitCh
}

// notify wakes the Wait channels. It costs one atomic load when nobody waits.
func (l *Log) notify() {
	if !l.hasWaiters.Load() {
		return
	}
	l.waitMu.Lock()
	if l.waitCh != nil {
		close(l.waitCh)
		l.waitCh = nil
	}
	l.hasWaiters.Store(false)
	l.waitMu.Unlock()
}

// fail marks the log as failed after an I/O error that may have left the
// page cache and the disk in disagreement (a failed fsync, a failed
// rollback): every later append answers KAFKA_STORAGE_ERROR.
func (l *Log) fail(op string, err error) *StorageError {
	se := &StorageError{Op: op, Err: err}
	if l.failed.CompareAndSwap(nil, se) {
		l.logger().Error("log failed; appends disabled until restart", "dir", l.dir, "op", op, "err", err)
		if l.m != nil && l.m.opts.OnFail != nil {
			go l.m.opts.OnFail(l.dir, se)
		}
	}
	return se
}

// Err returns the I/O error that failed the log, or nil.
func (l *Log) Err() error {
	if se := l.failed.Load(); se != nil {
		return se
	}
	return nil
}

// segmentFor returns the segment holding offset (the last one with base <=
// offset) from a snapshot, or -1.
func segmentFor(segs []*segment, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })
	return i - 1
}

// logger is the manager's logger with the log's topic and partition (made
// when needed: a logger per log costs memory and start-up time with many
// partitions).
func (l *Log) logger() *slog.Logger {
	return l.m.logger.With("topic", l.topic, "partition", l.partition)
}
