package compact

import (
	"math"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// logView is one compacted log seen by the scheduler: Kafka's LogToClean
// plus what the status report needs.
type logView struct {
	tp  log.TopicPartition
	l   *log.Log
	cfg TopicConfig
	now int64

	segs                     []log.SegmentInfo
	logStart, leo, stable    int64
	firstDirty               int64 // the cleaner checkpoint, clamped to the log
	firstUncleanable         int64 // the clean range ends here
	uncleanableReason        string
	cleanBytes, dirtyBytes   int64 // below firstDirty / in [firstDirty, firstUncleanable)
	ratio                    float64
	firstDirtyTimestamp      int64 // max timestamp of the first dirty batch, -1 if unknown
	needNow                  bool  // max.compaction.lag.ms exceeded
	horizonDue               bool  // a kept tombstone's delete horizon has passed
	activeBase, activeSize   int64
	activeCreatedMs          int64
	activeFirstTimestamp     int64
	resetCheckpoint          bool // the checkpoint was outside the log
	nonActiveBelowFirstDirty bool // there are segments a horizon-only pass can clean
}

// firstBatchMaxTimestamp returns the max timestamp of the first batch
// holding an offset >= from, or -1.
func firstBatchMaxTimestamp(l *log.Log, from int64) int64 {
	ts := int64(-1)
	_ = l.ScanBatches(from, func(h batch.Header, _ log.BatchPosition) bool {
		ts = h.MaxTimestamp // with a delete horizon the base timestamp is the horizon; max stays a record time
		return false
	})
	return ts
}

// analyze computes the view of l: where the dirty section starts and ends
// and whether (and why) it is due for cleaning. checkpoint < 0 means none.
func analyze(tp log.TopicPartition, l *log.Log, cfg TopicConfig, checkpoint, nowMs int64, pendingHorizon int64) *logView {
	v := &logView{tp: tp, l: l, cfg: cfg, now: nowMs, firstDirtyTimestamp: -1, activeFirstTimestamp: -1}
	v.segs = l.Segments()
	v.logStart = l.LogStartOffset()
	v.leo = l.LogEndOffset()
	v.stable = l.LastStableOffset()
	act := v.segs[len(v.segs)-1]
	v.activeBase, v.activeSize, v.activeCreatedMs = act.BaseOffset, act.Size, act.Created.UnixMilli()

	v.firstDirty = checkpoint
	if checkpoint < v.logStart || checkpoint > v.leo {
		v.resetCheckpoint = checkpoint >= 0 && checkpoint > v.leo
		v.firstDirty = v.logStart
	}

	v.firstUncleanable, v.uncleanableReason = v.activeBase, "active segment"
	if v.stable < v.firstUncleanable {
		// As Kafka, the clean range ends at the base of the segment holding
		// the last stable offset: nothing at or above it is rewritten.
		fu := v.stable
		for _, s := range v.segs {
			if s.BaseOffset <= v.stable && v.stable < s.NextOffset {
				fu = s.BaseOffset
			}
		}
		v.firstUncleanable, v.uncleanableReason = fu, "last stable offset"
	}
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range v.segs[:len(v.segs)-1] {
			if s.NextOffset <= v.firstDirty || s.BaseOffset >= v.firstUncleanable {
				continue
			}
			if s.LargestTimestamp > nowMs-cfg.MinCompactionLagMs {
				if s.BaseOffset < v.firstUncleanable {
					v.firstUncleanable, v.uncleanableReason = s.BaseOffset, "min.compaction.lag.ms"
				}
				break
			}
		}
	}
	v.firstUncleanable = max(v.firstUncleanable, v.firstDirty)

	for _, s := range v.segs[:len(v.segs)-1] {
		switch {
		case s.BaseOffset >= v.firstUncleanable:
		case s.NextOffset <= v.firstDirty:
			v.cleanBytes += s.Size
			v.nonActiveBelowFirstDirty = true
		default:
			v.dirtyBytes += s.Size
			if s.BaseOffset < v.firstDirty {
				v.nonActiveBelowFirstDirty = true
			}
		}
	}
	if total := v.cleanBytes + v.dirtyBytes; total > 0 {
		v.ratio = float64(v.dirtyBytes) / float64(total)
	}
	if v.leo > v.firstDirty {
		v.firstDirtyTimestamp = firstBatchMaxTimestamp(l, v.firstDirty)
	}
	if v.activeSize > 0 {
		if v.activeBase >= v.firstDirty && v.firstDirtyTimestamp >= 0 && v.dirtyBytes == 0 {
			v.activeFirstTimestamp = v.firstDirtyTimestamp
		} else {
			v.activeFirstTimestamp = firstBatchMaxTimestamp(l, v.activeBase)
		}
	}
	if cfg.MaxCompactionLagMs < math.MaxInt64 && v.dirtyBytes > 0 && v.firstDirtyTimestamp >= 0 &&
		nowMs-v.firstDirtyTimestamp > cfg.MaxCompactionLagMs {
		v.needNow = true
	}
	v.horizonDue = pendingHorizon <= nowMs && v.nonActiveBelowFirstDirty
	return v
}

// due reports whether the log should be cleaned now (Kafka's rule plus
// tombstones whose horizon passed).
func (v *logView) due() bool {
	if v.dirtyBytes > 0 && (v.needNow || v.ratio > v.cfg.MinCleanableDirtyRatio) {
		return true
	}
	return v.horizonDue
}

// rollDue reports whether the active segment should be rolled without an
// append so that its data becomes cleanable: it holds data older than
// segment.ms or max.compaction.lag.ms. Kafka only rolls on append, so a
// quiet compacted partition never compacts there.
func (v *logView) rollDue(segmentMs int64) bool {
	if v.activeSize == 0 {
		return false
	}
	age := v.now - v.activeCreatedMs
	if age >= segmentMs || age >= v.cfg.MaxCompactionLagMs {
		return true
	}
	return v.activeFirstTimestamp >= 0 && v.cfg.MaxCompactionLagMs < math.MaxInt64 &&
		v.now-v.activeFirstTimestamp > v.cfg.MaxCompactionLagMs
}

// rollAt is when the active segment rolls by time, and which setting
// makes it roll then: housekeeping rolls it once it is older than
// segment.ms minus the log's jitter, the cleaner once it is older than
// segment.ms or max.compaction.lag.ms or holds a record older than
// max.compaction.lag.ms (rollDue). An empty active segment has no roll
// time (0, ""): it starts counting at its first append.
func (v *logView) rollAt(segmentMs, jitterMs int64) (int64, string) {
	if v.activeSize == 0 {
		return 0, ""
	}
	at, by := v.activeCreatedMs+segmentMs-jitterMs+1, "segment.ms"
	if lag := v.cfg.MaxCompactionLagMs; lag < math.MaxInt64-v.activeCreatedMs {
		if t := v.activeCreatedMs + lag; t < at {
			at, by = t, "max.compaction.lag.ms"
		}
		if v.activeFirstTimestamp >= 0 && lag < math.MaxInt64-v.activeFirstTimestamp-1 {
			if t := v.activeFirstTimestamp + lag + 1; t < at {
				at, by = t, "max.compaction.lag.ms"
			}
		}
	}
	return at, by
}

// waitingReason explains why a log that is not due is not being cleaned.
func (v *logView) waitingReason() string {
	switch {
	case v.dirtyBytes == 0 && v.leo > v.firstDirty && v.uncleanableReason == "active segment":
		return "dirty data is all in the active segment (rolls at segment.ms or max.compaction.lag.ms)"
	case v.dirtyBytes == 0 && v.leo > v.firstDirty:
		return "dirty data is newer than " + v.uncleanableReason
	case v.dirtyBytes == 0:
		return "clean: nothing dirty"
	default:
		return "dirty ratio below min.cleanable.dirty.ratio"
	}
}
