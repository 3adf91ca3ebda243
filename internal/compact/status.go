package compact

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/sluice-broker/sluice/internal/log"
)

// Reason codes of PartitionStatus (also the "reason" label of
// sluice_compaction_state).
const (
	ReasonCleaning         = "cleaning"           // a pass is running
	ReasonDue              = "due"                // will be cleaned by the next free worker
	ReasonActiveSegment    = "active_segment"     // all dirty data is in the active segment
	ReasonMinLag           = "min_compaction_lag" // dirty data younger than min.compaction.lag.ms
	ReasonLastStableOffset = "last_stable_offset" // dirty data above the last stable offset
	ReasonRatio            = "ratio"              // dirty ratio not above min.cleanable.dirty.ratio
	ReasonClean            = "clean"              // nothing dirty
	ReasonError            = "error"              // the last pass failed; retried at RetryAtMs
	ReasonDisabled         = "disabled"           // log.cleaner.enable=false
)

// PartitionStatus answers "why hasn't my topic compacted?" for one
// partition of a compacted topic. Times are Unix milliseconds (0 = never).
type PartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`

	DirtyRatio             float64 `json:"dirty_ratio"`
	MinCleanableDirtyRatio float64 `json:"min_cleanable_dirty_ratio"`
	CleanBytes             int64   `json:"clean_bytes"`
	CleanableBytes         int64   `json:"cleanable_bytes"`
	ActiveSegmentBytes     int64   `json:"active_segment_bytes"`
	ActiveSegmentAgeMs     int64   `json:"active_segment_age_ms"`
	// ActiveSegmentRollMs is when the active segment rolls by time (0: it
	// is empty, and starts counting at its first append), because of
	// ActiveSegmentRollBy (segment.ms or max.compaction.lag.ms); it rolls
	// earlier if an append would take it past SegmentBytes (segment.bytes).
	ActiveSegmentRollMs int64  `json:"active_segment_roll_ms"`
	ActiveSegmentRollBy string `json:"active_segment_roll_by,omitempty"`
	SegmentBytes        int64  `json:"segment_bytes"`
	LogStartOffset      int64  `json:"log_start_offset"`
	LogEndOffset        int64  `json:"log_end_offset"`
	// Checkpoint is the cleaner checkpoint: everything below it has been
	// cleaned (-1: never cleaned).
	Checkpoint int64 `json:"checkpoint"`
	// CleanableUntil is where the cleanable range ends now.
	CleanableUntil int64 `json:"cleanable_until"`

	LastPassMs           int64 `json:"last_pass_ms"`
	LastPassDurationMs   int64 `json:"last_pass_duration_ms"`
	LastPassBytesRead    int64 `json:"last_pass_bytes_read"`
	LastPassBytesWritten int64 `json:"last_pass_bytes_written"`
	Passes               int64 `json:"passes"`

	// TombstonesPending counts tombstones kept by the last pass (or found
	// after a restart) that wait for their delete horizon; NextHorizonMs
	// is the earliest such horizon.
	TombstonesPending int64 `json:"tombstones_pending"`
	NextHorizonMs     int64 `json:"next_horizon_ms"`

	Reason              string `json:"reason"`
	Detail              string `json:"detail"`
	LastError           string `json:"last_error,omitempty"`
	LastErrorMs         int64  `json:"last_error_ms,omitempty"`
	ConsecutiveFailures int    `json:"consecutive_failures,omitempty"`
	RetryAtMs           int64  `json:"retry_at_ms,omitempty"`
}

// StatusReport is the JSON document of the status endpoint.
type StatusReport struct {
	Enabled          bool              `json:"enabled"`
	Threads          int               `json:"threads"`
	DedupeBufferSize int64             `json:"dedupe_buffer_size"`
	NowMs            int64             `json:"now_ms"`
	Partitions       []PartitionStatus `json:"partitions"`
}

// Status reports every partition of the compacted topics (of one topic if
// topic != ""), sorted by topic and partition.
func (c *Cleaner) Status(topic string) StatusReport {
	rep := StatusReport{Enabled: !c.opts.Disabled, Threads: c.opts.Threads, DedupeBufferSize: c.opts.DedupeBufferSize, NowMs: c.nowMs(),
		Partitions: []PartitionStatus{}} // [] rather than null in the JSON
	for _, e := range c.compactedLogs() {
		if topic != "" && e.tp.Topic != topic {
			continue
		}
		rep.Partitions = append(rep.Partitions, c.partitionStatus(e.tp, e.l))
	}
	return rep
}

func (c *Cleaner) partitionStatus(tp log.TopicPartition, l *log.Log) PartitionStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stateLocked(tp)
	v := c.viewLocked(tp, l)
	ps := PartitionStatus{
		Topic: tp.Topic, Partition: tp.Partition,
		DirtyRatio: v.ratio, MinCleanableDirtyRatio: v.cfg.MinCleanableDirtyRatio,
		CleanBytes: v.cleanBytes, CleanableBytes: v.dirtyBytes,
		ActiveSegmentBytes: v.activeSize, ActiveSegmentAgeMs: v.now - v.activeCreatedMs,
		LogStartOffset: v.logStart, LogEndOffset: v.leo,
		Checkpoint: c.checkpointLocked(tp), CleanableUntil: v.firstUncleanable,
		LastPassMs: st.lastPassMs, LastPassDurationMs: st.lastPass.Duration.Milliseconds(),
		LastPassBytesRead: st.lastPass.BytesRead, LastPassBytesWritten: st.lastPass.BytesWritten,
		Passes:            st.passes,
		TombstonesPending: st.pendingTombstones,
	}
	lcfg := l.Config()
	ps.SegmentBytes = lcfg.SegmentBytes
	ps.ActiveSegmentRollMs, ps.ActiveSegmentRollBy = v.rollAt(lcfg.SegmentMs, l.RollJitterMs())
	if st.pendingHorizon != math.MaxInt64 {
		ps.NextHorizonMs = st.pendingHorizon
	}
	if st.lastErr != "" {
		ps.LastError, ps.LastErrorMs, ps.ConsecutiveFailures, ps.RetryAtMs = st.lastErr, st.lastErrMs, st.failures, st.retryAtMs
	}
	ps.Reason, ps.Detail = c.reasonLocked(st, v)
	return ps
}

func (c *Cleaner) reasonLocked(st *partState, v *logView) (string, string) {
	switch {
	case c.opts.Disabled:
		return ReasonDisabled, "log.cleaner.enable=false"
	case st.inProgress:
		return ReasonCleaning, "a cleaning pass is running"
	case st.lastErr != "" && st.retryAtMs > v.now:
		return ReasonError, "last pass failed: " + st.lastErr
	case v.due() && v.needNow:
		return ReasonDue, "dirty data older than max.compaction.lag.ms"
	case v.due() && v.dirtyBytes == 0:
		return ReasonDue, "a tombstone's delete horizon has passed"
	case v.due():
		return ReasonDue, "dirty ratio above min.cleanable.dirty.ratio"
	case v.dirtyBytes > 0:
		return ReasonRatio, v.waitingReason()
	case v.leo > v.firstDirty && v.uncleanableReason == "min.compaction.lag.ms":
		return ReasonMinLag, v.waitingReason()
	case v.leo > v.firstDirty && v.uncleanableReason == "last stable offset":
		return ReasonLastStableOffset, v.waitingReason()
	case v.leo > v.firstDirty:
		return ReasonActiveSegment, v.waitingReason()
	default:
		return ReasonClean, v.waitingReason()
	}
}

// StatusPath is where the broker mounts StatusHandler on its metrics
// listener.
const StatusPath = "/compaction/status"

// StatusHandler serves Status as JSON: GET StatusPath[?topic=NAME].
func (c *Cleaner) StatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rep := c.Status(r.URL.Query().Get("topic"))
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			c.logger.Warn("cannot write compaction status", "err", err)
		}
	})
}
