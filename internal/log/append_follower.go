package log

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sluice-broker/sluice/internal/batch"
)

// The follower's write path: batches appended exactly as the leader wrote
// them, beside the leader's Append (the idea of nats-server's separate
// replica write path, Kafka's UnifiedLog.appendAsFollower). It shares
// Append's last stages (writeLocked, indexLocked, publishLocked,
// finishLocked, syncPolicy); what differs is that nothing is assigned or
// judged: offsets, epochs, timestamps and CRCs are the leader's, and the
// producer state only learns.

// Errors of AppendAsFollower, wrapped in *AppendError (errors.Is works).
var (
	// ErrUnexpectedAppendOffset: the first batch does not start at the
	// log end offset (Kafka's UnexpectedAppendOffsetException). The
	// replica must truncate (or fetch from) the log end offset first.
	ErrUnexpectedAppendOffset = errors.New("log: follower append does not start at the log end offset")
	// ErrOffsetsOutOfOrder: a batch does not start after the previous
	// one's last offset, or leaves a gap in a log that is not compacted
	// (Kafka's OffsetsOutOfOrderException).
	ErrOffsetsOutOfOrder = errors.New("log: follower append offsets out of order")
	// ErrLeaderEpochOutOfOrder: a batch's partitionLeaderEpoch is older
	// than an earlier batch's or than the leader-epoch cache's latest: the
	// replica must truncate by leader epoch first.
	ErrLeaderEpochOutOfOrder = errors.New("log: follower append leader epochs out of order")
)

// AppendAsFollower appends batches a partition's leader wrote (as a
// follower fetched them), all or nothing, writing records verbatim: base
// offsets, last offset deltas, partitionLeaderEpoch, timestamps and CRCs
// stay as they are, so the follower's log holds the leader's bytes.
// records is not modified.
//
// Each batch's framing, magic and CRC-32C are checked (batch.Inspect as
// for batches read back from a log; the records of compressed batches are
// not decoded, and max.message.bytes, timestamps and compaction's key rule
// are the leader's business, as Kafka does not apply them to followers
// either). The whole append must fit in a segment (RECORD_LIST_TOO_LARGE).
// Control batches must be transaction markers.
//
// The offsets must continue the log: the first batch starts at the log
// end offset (else ErrUnexpectedAppendOffset, OFFSET_OUT_OF_RANGE: a gap
// or an overlap), and each further batch right after the previous one's
// last offset (else ErrOffsetsOutOfOrder, INVALID_RECORD). A compacted
// log may have gaps where compaction removed whole batches, so there a
// batch, the first included, need only start after the offsets before it
// (Kafka's rule). Epochs (other than -1, no epoch) must not decrease,
// within the append or below the leader-epoch cache's latest
// (ErrLeaderEpochOutOfOrder); each batch that starts a newer epoch records
// it in the cache and leader-epoch-checkpoint.
//
// The ProducerGuard learns of every batch with a producer id through
// Appended, and a TxnGuard of every marker (ending its transaction, with
// the .txnindex entry of an abort) — nothing is refused: the leader
// already judged them. So when this replica becomes leader, a producer's
// retry is recognised as a duplicate and open transactions hold the last
// stable offset as they did on the old leader.
//
// Segment rolling, flush.messages (with DeferSync as for Append), the
// publication of the new log end offset and the errors for a closed or
// failed log (ErrClosed, *StorageError) are as for Append.
func (l *Log) AppendAsFollower(records []byte, opts FollowerAppendOptions) (FollowerAppendResult, error) {
	if err := l.ensureLoaded(); err != nil {
		return FollowerAppendResult{}, err
	}
	res := FollowerAppendResult{FirstOffset: -1, LastOffset: -1, LogStartOffset: l.logStart.Load()}
	cfg := l.config()
	nowMs := l.nowMs(opts.Now)

	// 1. The batches on their own, no lock held.
	var markerBuf [1]batch.Marker
	span, markers, err := validateReplica(records, markerBuf[:0], cfg)
	if err != nil {
		return res, err
	}

	l.mu.Lock()
	if err := l.appendableLocked(); err != nil {
		l.mu.Unlock()
		return res, err
	}
	// 2. Instead of the producer check and the offset assignment: the
	// batches must continue this log.
	if err := l.checkContinuesLocked(cfg, &span); err != nil {
		l.mu.Unlock()
		return res, err
	}
	next := span.last + 1

	// 4. One write to the active segment, as for the leader.
	seg, pos0, err := l.writeLocked(cfg, nowMs, records, span.last)
	if err != nil {
		l.mu.Unlock()
		return res, err
	}

	// 5. Indexes, the epochs given, producer state, the new end, flushing.
	end := l.indexLocked(cfg, seg, pos0, records)
	epochChanged := l.recordEpochsLocked(records)
	txnErr := l.publishLocked(seg, records, markers, end, next)
	needSync, err := l.finishLocked(cfg, span.count, epochChanged, txnErr)
	if err != nil {
		return res, err
	}
	res.FirstOffset, res.LastOffset = span.first, span.last
	res.LogStartOffset = l.logStart.Load()
	res.SyncOffset, err = l.syncPolicy(needSync, opts.DeferSync, next)
	return res, err
}

// replicaSpan is what validateReplica learned about a follower's batches.
type replicaSpan struct {
	first, last int64 // the first batch's base offset, the last batch's last offset
	count       int64 // the sum of lastOffsetDelta+1 (flush.messages)
	firstEpoch  int32 // the first partitionLeaderEpoch other than -1, or -1
}

// validateReplica is stage 1 of AppendAsFollower: each batch is checked on
// its own and against the previous one (see AppendAsFollower); the
// transaction markers are parsed and appended to markers.
func validateReplica(records []byte, markers []batch.Marker, cfg *Config) (replicaSpan, []batch.Marker, error) {
	span := replicaSpan{first: -1, last: -1, firstEpoch: -1}
	if len(records) == 0 {
		return span, nil, &AppendError{Code: CodeInvalidRecord, Batch: -1, Msg: "follower append holds no record batch"}
	}
	if int64(len(records)) > cfg.SegmentBytes {
		return span, nil, &AppendError{Code: CodeRecordListTooLarge, Batch: -1,
			Msg: fmt.Sprintf("follower append of %d bytes larger than segment.bytes %d", len(records), cfg.SegmentBytes)}
	}
	vopts := batch.ValidateOptions{FromLog: true, MaxDecompressed: maxDecompressed(cfg)}
	lastEpoch := int32(-1)
	nb := 0
	for pos := 0; pos < len(records); nb++ {
		b, err := nextBatch(records, pos)
		if err != nil {
			return span, nil, batchErr(nb, err)
		}
		sum, err := batch.Inspect(b, vopts)
		if err != nil {
			return span, nil, batchErr(nb, err)
		}
		h := sum.Header
		if nb == 0 {
			span.first = h.BaseOffset
		} else if h.BaseOffset <= span.last || (!cfg.Compact && h.BaseOffset != span.last+1) {
			return span, nil, &AppendError{Code: CodeInvalidRecord, Batch: nb, Err: ErrOffsetsOutOfOrder,
				Msg: fmt.Sprintf("batch at offset %d after a batch ending at offset %d", h.BaseOffset, span.last)}
		}
		if e := h.PartitionLeaderEpoch; e >= 0 {
			if e < lastEpoch {
				return span, nil, &AppendError{Code: CodeInvalidRecord, Batch: nb, Err: ErrLeaderEpochOutOfOrder,
					Msg: fmt.Sprintf("batch at offset %d has leader epoch %d after epoch %d", h.BaseOffset, e, lastEpoch)}
			}
			if span.firstEpoch < 0 {
				span.firstEpoch = e
			}
			lastEpoch = e
		}
		if h.IsControl() {
			m, err := batch.ParseMarker(b, vopts.MaxDecompressed)
			if err != nil {
				return span, nil, batchErr(nb, err)
			}
			markers = append(markers, m)
		}
		span.last = h.LastOffset()
		span.count += int64(h.LastOffsetDelta) + 1
		pos += len(b)
	}
	return span, markers, nil
}

// checkContinuesLocked is the follower's stage 2, in place of the producer
// check and the offset assignment: the batches must start at the log end
// offset (past it on a compacted log) with an epoch no older than the
// leader-epoch cache's latest. Nothing changes.
func (l *Log) checkContinuesLocked(cfg *Config, span *replicaSpan) error {
	leo := l.leo.Load()
	if span.first < leo || (span.first > leo && !cfg.Compact) {
		return &AppendError{Code: CodeOffsetOutOfRange, Batch: 0, Err: ErrUnexpectedAppendOffset,
			Msg: fmt.Sprintf("first batch at offset %d, log end offset %d", span.first, leo)}
	}
	if span.firstEpoch >= 0 {
		if latest := l.epochs.latest(); span.firstEpoch < latest {
			return &AppendError{Code: CodeInvalidRecord, Batch: 0, Err: ErrLeaderEpochOutOfOrder,
				Msg: fmt.Sprintf("first batch has leader epoch %d, the log is at epoch %d", span.firstEpoch, latest)}
		}
	}
	return nil
}

// recordEpochsLocked is the follower's part of stage 5 for the
// leader-epoch cache: each batch whose partitionLeaderEpoch is newer than
// the latest starts that epoch at its base offset (the leader recorded the
// same entry when it appended the batch). It reports whether the cache
// changed.
func (l *Log) recordEpochsLocked(records []byte) bool {
	changed := false
	prev := int32(-1)
	for pos := 0; pos < len(records); {
		b := records[pos:]
		if e := int32(binary.BigEndian.Uint32(b[batch.OffPartitionLeaderEpoch:])); e != prev && e >= 0 {
			if l.epochs.assign(e, int64(binary.BigEndian.Uint64(b[batch.OffBaseOffset:]))) {
				changed = true
			}
			prev = e
		}
		pos += int(binary.BigEndian.Uint32(b[batch.OffLength:])) + 12
	}
	return changed
}
