package compact

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// Cleaner compacts the logs of a log.Manager whose config has Compact set.
// Start runs log.cleaner.threads workers; each repeatedly rolls idle active
// segments that hold old dirty data, picks the log most in need of
// cleaning (not being cleaned by another worker, not waiting out a retry
// backoff) and cleans it. RunOnce does one such round synchronously.
type Cleaner struct {
	opts   Options
	logger *slog.Logger

	mu          sync.Mutex
	checkpoints map[log.TopicPartition]int64
	state       map[log.TopicPartition]*partState
	cpDirty     bool
	psDirty     bool // a pass ended since PassStateFile was written

	wake    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	started bool
	closed  bool

	metrics *metrics
	sync0   worker // RunOnce / CleanNow use this one (guarded by runMu)
	runMu   sync.Mutex
}

// partState is what the cleaner remembers about one partition.
type partState struct {
	inProgress bool
	// failures counts consecutive failed passes; retryAtMs is when the
	// partition may be tried again.
	failures  int
	lastErr   string
	lastErrMs int64
	retryAtMs int64
	// last successful pass
	lastPassMs int64
	lastPass   PassResult
	passes     int64
	// pendingHorizon is the earliest delete horizon of a tombstone kept by
	// the last pass (MaxInt64: none); horizonKnown is false until a pass or
	// a scan after start has computed it.
	pendingHorizon    int64
	pendingTombstones int64
	horizonKnown      bool
}

// New creates a Cleaner and reads cleaner-offset-checkpoint. It does not
// start any goroutine (see Start).
func New(opts Options) (*Cleaner, error) {
	if opts.FS == nil || opts.Manager == nil || opts.DataDir == "" {
		return nil, errors.New("compact: Options.FS, DataDir and Manager are required")
	}
	opts.setDefaults()
	c := &Cleaner{
		opts:   opts,
		logger: opts.Logger.With("component", "log-cleaner"),
		state:  map[log.TopicPartition]*partState{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
	cps, err := readCheckpoint(opts.FS, opts.DataDir)
	if err != nil {
		// A bad checkpoint costs a full re-clean, never data: start over.
		c.logger.Warn("cleaner checkpoint unreadable; every compacted log counts as dirty", "err", err)
		cps = map[log.TopicPartition]int64{}
	}
	c.checkpoints = cps
	ps, err := readPassState(opts.FS, opts.DataDir)
	if err != nil {
		c.logger.Warn("cleaner pass state unreadable; last passes before the restart are not shown", "err", err)
	}
	c.restorePassState(ps)
	if opts.Registerer != nil {
		c.metrics = newMetrics(c)
		if err := opts.Registerer.Register(c.metrics); err != nil {
			return nil, fmt.Errorf("compact: register metrics: %w", err)
		}
	}
	return c, nil
}

func (c *Cleaner) nowMs() int64 { return c.opts.Now().UnixMilli() }

func (c *Cleaner) mapBytesPerThread() int64 {
	return max(c.opts.DedupeBufferSize/int64(c.opts.Threads), slotSize)
}

// Start runs the worker goroutines (none when the cleaner is disabled).
func (c *Cleaner) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed || c.opts.Disabled {
		return
	}
	c.started = true
	for i := 0; i < c.opts.Threads; i++ {
		c.wg.Add(1)
		go c.workerLoop()
	}
}

// Wake makes an idle worker look for work now instead of after its backoff.
func (c *Cleaner) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close stops the workers (a pass in progress finishes its current group
// first) and writes the checkpoint.
func (c *Cleaner) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.wg.Wait()
	if c.metrics != nil && c.opts.Registerer != nil {
		c.opts.Registerer.Unregister(c.metrics)
	}
	return errors.Join(c.flushCheckpoint(), c.flushPassState())
}

func (c *Cleaner) workerLoop() {
	defer c.wg.Done()
	w := &worker{}
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		did, _ := c.round(w)
		if did {
			continue
		}
		t := time.NewTimer(time.Duration(c.opts.BackoffMs) * time.Millisecond)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-c.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// RunOnce does one round synchronously: roll idle active segments, then
// clean the log most in need, if any. It reports whether a log was cleaned
// and the pass's result or error. For tests and tools; it may run while
// the workers run.
func (c *Cleaner) RunOnce() (PassResult, bool, error) {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	var res PassResult
	did, err := c.roundResult(&c.sync0, &res)
	return res, did, err
}

func (c *Cleaner) round(w *worker) (bool, error) {
	var res PassResult
	return c.roundResult(w, &res)
}

func (c *Cleaner) roundResult(w *worker, res *PassResult) (bool, error) {
	if c.opts.Disabled {
		return false, nil
	}
	v := c.grab()
	if err := c.flushCheckpoint(); err != nil { // a checkpoint grab lowered
		c.logger.Error("cannot write cleaner checkpoint", "err", err)
	}
	if v == nil {
		return false, nil
	}
	r, err := c.run(w, v)
	*res = r
	return true, err
}

// CleanNow cleans one partition right away if it has anything to clean,
// ignoring the dirty ratio (an operator's or a test's "compact now"). It
// waits for a pass already running on it.
func (c *Cleaner) CleanNow(topic string, partition int32) (PassResult, error) {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	l := c.opts.Manager.Get(topic, partition)
	if l == nil {
		return PassResult{}, fmt.Errorf("compact: no partition %s-%d", topic, partition)
	}
	if !l.Config().Compact {
		return PassResult{}, fmt.Errorf("compact: %s-%d is not a compacted topic", topic, partition)
	}
	c.runMu.Lock()
	defer c.runMu.Unlock()
	for {
		c.mu.Lock()
		st := c.stateLocked(tp)
		if !st.inProgress {
			st.inProgress = true
			v := c.viewLocked(tp, l)
			c.mu.Unlock()
			return c.run(&c.sync0, v)
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond) // another worker's pass; they take milliseconds to seconds
	}
}

func (c *Cleaner) stateLocked(tp log.TopicPartition) *partState {
	st := c.state[tp]
	if st == nil {
		st = &partState{pendingHorizon: math.MaxInt64}
		c.state[tp] = st
	}
	return st
}

// checkpointLocked returns the partition's cleaner checkpoint, -1 if none.
func (c *Cleaner) checkpointLocked(tp log.TopicPartition) int64 {
	if cp, ok := c.checkpoints[tp]; ok {
		return cp
	}
	return -1
}

// viewLocked analyses one log. The first time after start it scans the
// clean section's batch headers for delete horizons, so tombstones kept
// before a restart are still removed on time.
func (c *Cleaner) viewLocked(tp log.TopicPartition, l *log.Log) *logView {
	st := c.stateLocked(tp)
	c.lowerCheckpointLocked(tp, l)
	cp := c.checkpointLocked(tp)
	if !st.horizonKnown {
		st.pendingHorizon, st.pendingTombstones = scanHorizons(l, cp)
		st.horizonKnown = true
	}
	return analyze(tp, l, c.opts.TopicConfig(tp.Topic), cp, c.nowMs(), st.pendingHorizon)
}

// scanHorizons finds the earliest delete horizon among batches below the
// checkpoint that carry one and still hold a tombstone, and counts those
// tombstones.
func scanHorizons(l *log.Log, checkpoint int64) (int64, int64) {
	minH, n := int64(math.MaxInt64), int64(0)
	if checkpoint <= l.LogStartOffset() {
		return minH, 0
	}
	type pos struct {
		seg int64
		h   batch.Header
	}
	var cands []pos
	_ = l.ScanBatches(l.LogStartOffset(), func(h batch.Header, at log.BatchPosition) bool {
		if h.BaseOffset >= checkpoint {
			return false
		}
		if h.HasDeleteHorizon() && !h.IsControl() && h.RecordCount > 0 {
			cands = append(cands, pos{at.Segment, h})
		}
		return true
	})
	for _, p := range cands {
		// Count the batch's tombstones (these batches are few: only those
		// that kept a tombstone when they were cleaned).
		_ = l.SegmentBatches(p.seg, func(b []byte) error {
			h, err := checkBatch(b)
			if err != nil || h.BaseOffset != p.h.BaseOffset {
				return nil
			}
			data := b[batch.HeaderSize:]
			if c := h.Compression(); c != batch.None {
				if data, err = batch.Decompress(c, data, 0); err != nil {
					return errStop
				}
			}
			var t int64
			_ = forEachRawRecord(data, h.RecordCount, func(r *rawRecord) error {
				if r.nullValue {
					t++
				}
				return nil
			})
			if t > 0 {
				n += t
				minH = min(minH, h.BaseTimestamp)
			}
			return errStop
		})
	}
	return minH, n
}

// compactedLogs lists the manager's logs with cleanup.policy compact.
func (c *Cleaner) compactedLogs() []struct {
	tp log.TopicPartition
	l  *log.Log
} {
	var out []struct {
		tp log.TopicPartition
		l  *log.Log
	}
	for _, tp := range c.opts.Manager.Partitions() {
		l := c.opts.Manager.Get(tp.Topic, tp.Partition)
		if l != nil && l.Config().Compact {
			out = append(out, struct {
				tp log.TopicPartition
				l  *log.Log
			}{tp, l})
		}
	}
	return out
}

// grab rolls idle active segments and picks the log to clean: among the
// due logs not in progress and not backing off after a failure, the one
// past max.compaction.lag.ms first, then the highest dirty ratio. The
// picked log is marked in progress.
func (c *Cleaner) grab() *logView {
	logs := c.compactedLogs()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	now := c.nowMs()
	var due []*logView
	for _, e := range logs {
		st := c.stateLocked(e.tp)
		if st.inProgress || st.retryAtMs > now {
			continue
		}
		v := c.viewLocked(e.tp, e.l)
		if v.resetCheckpoint {
			c.logger.Warn("cleaner checkpoint beyond the log end; cleaning from the log start",
				"topic", e.tp.Topic, "partition", e.tp.Partition, "checkpoint", c.checkpoints[e.tp], "log_end_offset", v.leo)
			delete(c.checkpoints, e.tp)
			c.cpDirty = true
		}
		if v.rollDue(e.l.Config().SegmentMs) {
			if err := e.l.Roll(); err != nil {
				c.logger.Error("cannot roll idle active segment", "topic", e.tp.Topic, "partition", e.tp.Partition, "err", err)
			} else {
				c.logger.Debug("rolled idle active segment so its data can be compacted", "topic", e.tp.Topic, "partition", e.tp.Partition)
				v = c.viewLocked(e.tp, e.l)
			}
		}
		if v.due() {
			due = append(due, v)
		}
	}
	c.dropGoneLocked(logs)
	if len(due) == 0 {
		return nil
	}
	sort.SliceStable(due, func(i, j int) bool {
		if due[i].needNow != due[j].needNow {
			return due[i].needNow
		}
		return due[i].ratio > due[j].ratio
	})
	v := due[0]
	c.stateLocked(v.tp).inProgress = true
	return v
}

// dropGoneLocked forgets partitions that no longer exist.
func (c *Cleaner) dropGoneLocked(logs []struct {
	tp log.TopicPartition
	l  *log.Log
}) {
	live := make(map[log.TopicPartition]bool, len(logs))
	for _, e := range logs {
		live[e.tp] = true
	}
	for tp, st := range c.state {
		if !live[tp] && !st.inProgress && c.opts.Manager.Get(tp.Topic, tp.Partition) == nil {
			delete(c.state, tp)
			c.psDirty = true
			if _, ok := c.checkpoints[tp]; ok {
				delete(c.checkpoints, tp)
				c.cpDirty = true
			}
		}
	}
}

// run cleans the grabbed log and records the outcome.
func (c *Cleaner) run(w *worker, v *logView) (PassResult, error) {
	res, err := c.clean(w, v)
	now := c.nowMs()
	c.mu.Lock()
	st := c.stateLocked(v.tp)
	st.inProgress = false
	switch {
	case err == nil:
		st.failures, st.lastErr, st.retryAtMs = 0, "", 0
		st.lastPassMs, st.lastPass = now, res
		st.passes++
		c.psDirty = true
		st.pendingHorizon, st.pendingTombstones, st.horizonKnown = res.MinPendingHorizon, res.TombstonesKept, true
		if c.checkpointLocked(v.tp) != res.EndOffset {
			c.checkpoints[v.tp] = res.EndOffset
			c.cpDirty = true
		}
	case errors.Is(err, errLogChanged) || errors.Is(err, log.ErrClosed):
		// Retention, truncation or deletion raced the pass: try again later,
		// with a fresh view, no penalty.
	default:
		c.psDirty = true
		st.failures++
		st.lastErr, st.lastErrMs = err.Error(), now
		backoff := c.opts.BackoffMs << min(st.failures-1, 20)
		st.retryAtMs = now + min(backoff, c.opts.MaxRetryBackoffMs)
	}
	failures, retryAt := st.failures, st.retryAtMs
	c.mu.Unlock()
	if c.metrics != nil {
		c.metrics.observe(res, err)
	}

	switch {
	case err == nil:
		c.logger.Info("cleaned log", "topic", v.tp.Topic, "partition", v.tp.Partition,
			"first_dirty", res.FirstDirty, "checkpoint", res.EndOffset, "map_full", res.MapFull, "keys", res.Keys,
			"segments_in", res.SegmentsIn, "segments_out", res.SegmentsOut,
			"bytes_read", res.BytesRead, "bytes_written", res.BytesWritten,
			"records_read", res.RecordsRead, "records_kept", res.RecordsKept,
			"tombstones_kept", res.TombstonesKept, "tombstones_removed", res.TombstonesDropped,
			"duration", res.Duration)
		if cerr := c.flushCheckpoint(); cerr != nil {
			c.logger.Error("cannot write cleaner checkpoint", "err", cerr)
		}
		if perr := c.flushPassState(); perr != nil {
			c.logger.Error("cannot write cleaner pass state", "err", perr)
		}
	case errors.Is(err, errLogChanged) || errors.Is(err, log.ErrClosed):
		c.logger.Info("cleaning pass abandoned: the log changed under it", "topic", v.tp.Topic, "partition", v.tp.Partition)
	default:
		if perr := c.flushPassState(); perr != nil {
			c.logger.Error("cannot write cleaner pass state", "err", perr)
		}
		c.logger.Error("cleaning failed; partition marked and retried after backoff",
			"topic", v.tp.Topic, "partition", v.tp.Partition, "err", err,
			"consecutive_failures", failures, "retry_at", time.UnixMilli(retryAt))
	}
	return res, err
}

// flushCheckpoint writes cleaner-offset-checkpoint if it changed.
func (c *Cleaner) flushCheckpoint() error {
	c.mu.Lock()
	if !c.cpDirty {
		c.mu.Unlock()
		return nil
	}
	snap := make(map[log.TopicPartition]int64, len(c.checkpoints))
	for k, v := range c.checkpoints {
		snap[k] = v
	}
	c.cpDirty = false
	c.mu.Unlock()
	if err := writeCheckpoint(c.opts.FS, c.opts.DataDir, snap); err != nil {
		c.mu.Lock()
		c.cpDirty = true
		c.mu.Unlock()
		return err
	}
	return nil
}

// Checkpoint returns a partition's cleaner checkpoint (the first dirty
// offset), or -1 if it was never cleaned.
func (c *Cleaner) Checkpoint(topic string, partition int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkpointLocked(log.TopicPartition{Topic: topic, Partition: partition})
}
