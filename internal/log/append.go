package log

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Append validates and appends the v2 RecordBatches of one produce (the raw
// "records" bytes of a partition, as they come off the wire), all or
// nothing: if any batch is bad, nothing is appended.
//
// Each batch is checked by batch.Inspect (framing, magic, CRC-32C, counts,
// records when uncompressed or when the topic needs them), against
// max.message.bytes (MESSAGE_TOO_LARGE), the timestamp window
// (INVALID_TIMESTAMP), compaction's key rule (INVALID_RECORD) and the
// ProducerGuard. With compression.type other than "producer"
// (Config.Compression), a batch whose codec differs is first re-encoded
// with the topic's codec (see recompress.go). Offsets are assigned by
// rewriting each batch's baseOffset and partitionLeaderEpoch in place —
// records is modified, unless some batch was re-encoded: then a new buffer
// is — and with message.timestamp.type=LogAppendTime its maxTimestamp,
// attributes and CRC. The bytes then go to the active segment in one write.
//
// Errors are *AppendError for bad input and guard refusals, *StorageError
// (KAFKA_STORAGE_ERROR) for I/O failures including a full disk — after
// which the segment is cut back to where it was, so nothing is corrupted —,
// ErrClosed for a closed log. KafkaCode maps all of them.
//
// When flush.messages is reached, Append returns only after the data is
// durable; concurrent appenders share one fsync (group commit).
//
// Append runs in stages, each a function of its own (AppendAsFollower, the
// follower's path, shares stages 4 and 5):
//
//  1. validateProduce: the batches on their own, no lock held;
//  2. checkProducersLocked: the ProducerGuard's verdict (an idempotent
//     retry ends the append here, answering with the original offsets);
//  3. assignOffsets: baseOffset, partitionLeaderEpoch, LogAppendTime;
//  4. writeLocked: roll if needed, one write to the active segment;
//  5. indexLocked, publishLocked, finishLocked and syncPolicy: indexes,
//     the leader-epoch cache, producer state, the new log end offset, the
//     flush policy.
func (l *Log) Append(records []byte, opts AppendOptions) (AppendResult, error) {
	if err := l.ensureLoaded(); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	cfg := l.config()
	nowMs := l.nowMs(opts.Now)

	// 1. Validation needs no lock. Room for one transaction marker (all a
	// produce usually holds) is kept on the stack.
	var markerBuf [1]batch.Marker
	records, markers, count, err := validateProduce(records, markerBuf[:0], cfg, &opts, nowMs)
	if err != nil {
		return res, err
	}

	l.mu.Lock()
	if err := l.appendableLocked(); err != nil {
		l.mu.Unlock()
		return res, err
	}
	// 2. Idempotence: a retried batch answers with its original offsets.
	dup, base, last, err := l.checkProducersLocked(records, markers, opts.Coordinator)
	if err != nil || dup {
		l.mu.Unlock()
		if err != nil {
			return res, err
		}
		return l.answerDuplicate(cfg, opts.DeferSync, base, last, res)
	}

	// 3. Offsets, epoch and LogAppendTime are written into the batches.
	leo := l.leo.Load()
	logAppend := cfg.MessageTimestampType == batch.LogAppendTime
	next := assignOffsets(records, leo, opts.LeaderEpoch, logAppend, nowMs)

	// 4. One write to the active segment.
	seg, pos0, err := l.writeLocked(cfg, nowMs, records, next-1)
	if err != nil {
		l.mu.Unlock()
		return res, err
	}

	// 5. Indexes, leader epoch, producer state, the new end, flush policy.
	end := l.indexLocked(cfg, seg, pos0, records)
	epochChanged := l.epochs.assign(opts.LeaderEpoch, leo)
	txnErr := l.publishLocked(seg, records, markers, end, next)
	needSync, err := l.finishLocked(cfg, count, epochChanged, txnErr)
	if err != nil {
		return res, err
	}

	res.BaseOffset, res.LastOffset = leo, next-1
	res.LogStartOffset = l.logStart.Load()
	if logAppend {
		res.LogAppendTime = nowMs
	}
	res.SyncOffset, err = l.syncPolicy(needSync, opts.DeferSync, next)
	return res, err
}

// validateProduce is stage 1 of Append: every batch of a produce is checked
// on its own (see Append), needing no lock. It returns the batches to
// write (records, or a new buffer when a batch was re-encoded for
// compression.type), their transaction markers in batch order (appended
// to markers) and the number of offsets they cover (the sum of
// lastOffsetDelta+1).
//
// The stages pass these as plain values, not in a struct: a struct would
// make the escape analysis move Append's marker buffer to the heap.
func validateProduce(records []byte, markers []batch.Marker, cfg *Config, opts *AppendOptions, nowMs int64) (
	out []byte, _ []batch.Marker, count int64, err error) {
	if len(records) == 0 {
		return nil, nil, 0, &AppendError{Code: CodeInvalidRecord, Batch: -1, Msg: "produce holds no record batch"}
	}
	if int64(len(records)) > cfg.SegmentBytes {
		return nil, nil, 0, &AppendError{Code: CodeRecordListTooLarge, Batch: -1,
			Msg: "produce larger than segment.bytes"}
	}
	vopts := batch.ValidateOptions{
		RequireKeys:     cfg.Compact,
		AllowControl:    opts.AllowControl,
		MaxDecompressed: maxDecompressed(cfg),
		// A coordinator's batches are trusted and may carry sequence -1.
		FromLog: opts.Coordinator,
	}
	checkTs := cfg.MessageTimestampType == batch.CreateTime &&
		(cfg.TimestampBeforeMaxMs != math.MaxInt64 || cfg.TimestampAfterMaxMs != math.MaxInt64)
	// The latest timestamp is in the header; the earliest needs the records.
	vopts.CheckRecords = checkTs && cfg.TimestampBeforeMaxMs != math.MaxInt64
	var splices []splice // batches re-encoded for compression.type; nil on the usual path
	newSize := len(records)
	nb := 0
	for pos := 0; pos < len(records); nb++ {
		b, err := nextBatch(records, pos)
		if err != nil {
			return nil, nil, 0, batchErr(nb, err)
		}
		if len(b) > cfg.MaxMessageBytes {
			return nil, nil, 0, &AppendError{Code: CodeMessageTooLarge, Batch: nb, Msg: "batch larger than max.message.bytes"}
		}
		var sum batch.Summary
		if needsRecompress(b, cfg.Compression) {
			var out []byte
			if out, sum, err = recompress(b, cfg.Compression, cfg.CompressionLevel, vopts); err != nil {
				return nil, nil, 0, recompressErr(nb, err)
			}
			if len(out) > cfg.MaxMessageBytes {
				return nil, nil, 0, &AppendError{Code: CodeMessageTooLarge, Batch: nb,
					Msg: "batch larger than max.message.bytes once re-encoded with compression.type " + cfg.Compression.String()}
			}
			splices = append(splices, splice{from: pos, to: pos + len(b), data: out})
			newSize += len(out) - len(b)
		} else if sum, err = batch.Inspect(b, vopts); err != nil {
			return nil, nil, 0, batchErr(nb, err)
		}
		if opts.Coordinator && !sum.Header.IsControl() &&
			(sum.Header.RecordCount < 1 || sum.Header.LastOffsetDelta != sum.Header.RecordCount-1) {
			return nil, nil, 0, &AppendError{Code: CodeInvalidRecord, Batch: nb, Msg: "coordinator batch with inconsistent record count"}
		}
		if sum.Header.IsControl() {
			if !opts.AllowControl {
				return nil, nil, 0, &AppendError{Code: CodeInvalidRecord, Batch: nb, Msg: "clients are not allowed to write control batches"}
			}
			m, err := batch.ParseMarker(b, vopts.MaxDecompressed)
			if err != nil {
				return nil, nil, 0, batchErr(nb, err)
			}
			m.TransactionVersion = opts.MarkerTransactionVersion
			markers = append(markers, m)
		}
		if checkTs && sum.Header.RecordCount > 0 {
			if cfg.TimestampBeforeMaxMs != math.MaxInt64 && sum.MinTimestamp < nowMs-cfg.TimestampBeforeMaxMs {
				return nil, nil, 0, &AppendError{Code: CodeInvalidTimestamp, Batch: nb,
					Msg: "record timestamp earlier than message.timestamp.before.max.ms allows"}
			}
			if cfg.TimestampAfterMaxMs != math.MaxInt64 && sum.MaxTimestamp > nowMs+cfg.TimestampAfterMaxMs {
				return nil, nil, 0, &AppendError{Code: CodeInvalidTimestamp, Batch: nb,
					Msg: "record timestamp later than message.timestamp.after.max.ms allows"}
			}
		}
		count += int64(sum.Header.LastOffsetDelta) + 1
		pos += len(b)
	}
	if splices != nil {
		if int64(newSize) > cfg.SegmentBytes {
			return nil, nil, 0, &AppendError{Code: CodeRecordListTooLarge, Batch: -1,
				Msg: "produce larger than segment.bytes once re-encoded with compression.type " + cfg.Compression.String()}
		}
		records = applySplices(records, splices, newSize)
	}
	return records, markers, count, nil
}

// appendableLocked reports why the log takes no append (closed, or failed
// by an earlier I/O error), or nil.
func (l *Log) appendableLocked() error {
	if l.closed {
		return ErrClosed
	}
	if se := l.failed.Load(); se != nil {
		return se
	}
	return nil
}

// checkProducersLocked is stage 2 of Append: the ProducerGuard judges every
// batch with a producer id (h.BaseOffset is still the client's): data
// batches by Check (CheckCoordinator for a coordinator's), markers by
// CheckMarker. dup reports an idempotent retry with its original offsets;
// an error refuses the whole append. Nothing changes yet.
func (l *Log) checkProducersLocked(records []byte, markers []batch.Marker, coordinator bool) (dup bool, base, last int64, err error) {
	if _, isNoop := l.guard.(noopGuard); isNoop {
		return false, 0, 0, nil
	}
	tg, _ := l.guard.(TxnGuard)
	mi := 0
	for pos := 0; pos < len(records); {
		h, _ := batch.ParseHeader(records[pos:])
		if h.ProducerID >= 0 {
			switch {
			case h.IsControl():
				if tg != nil {
					err = tg.CheckMarker(markers[mi])
				}
			case coordinator:
				if tg != nil {
					err = tg.CheckCoordinator(h)
				}
			default:
				dup, base, last, err = l.guard.Check(h)
			}
			if err != nil {
				var ae *AppendError
				if !errors.As(err, &ae) {
					// Keep the guard's own Kafka code when it has one.
					err = &AppendError{Code: KafkaCode(err), Batch: -1, Msg: err.Error(), Err: err}
				}
				return false, 0, 0, err
			}
			if dup {
				return true, base, last, nil
			}
		}
		if h.IsControl() {
			mi++
		}
		pos += h.TotalSize()
	}
	return false, 0, 0, nil
}

// answerDuplicate completes an append the ProducerGuard recognised as a
// retry of the batch at [base, last] (called without the append lock).
func (l *Log) answerDuplicate(cfg *Config, deferSync bool, base, last int64, res AppendResult) (AppendResult, error) {
	res.BaseOffset, res.LastOffset, res.Duplicate = base, last, true
	res.LogStartOffset = l.logStart.Load()
	// A retry answered while the original's fsync is still pending (its
	// answer lost on another connection) must not be acknowledged earlier.
	if cfg.FlushMessages != math.MaxInt64 && l.durable.Load() <= last {
		if deferSync {
			res.SyncOffset = last + 1
		} else if err := l.syncTo(last + 1); err != nil {
			return res, err
		}
	}
	return res, nil
}

// assignOffsets is stage 3 of Append (the leader's; a follower keeps the
// offsets it was given): each batch's baseOffset (from next on) and
// partitionLeaderEpoch are rewritten in place, and with logAppend its
// LogAppendTime (nowMs, with a new CRC). It returns the offset after the
// last batch.
func assignOffsets(records []byte, next int64, epoch int32, logAppend bool, nowMs int64) int64 {
	for pos := 0; pos < len(records); {
		b := records[pos:]
		size := int(binary.BigEndian.Uint32(b[batch.OffLength:])) + 12
		b = b[:size]
		batch.SetBaseOffset(b, next)
		batch.SetPartitionLeaderEpoch(b, epoch)
		if logAppend {
			batch.SetLogAppendTime(b, nowMs)
		}
		next += int64(binary.BigEndian.Uint32(b[batch.OffLastOffsetDelta:])) + 1
		pos += size
	}
	return next
}

// writeLocked is stage 4, shared by Append and AppendAsFollower: the
// active segment is rolled if records (ending at offset lastOffset) do not
// fit it or it is due by segment.ms, then records are written at its end in
// one write. It returns the segment and the position written at. After a
// failed write the segment is cut back to that position (if even that
// fails, the log fails: the segment may hold garbage after its published
// end).
func (l *Log) writeLocked(cfg *Config, nowMs int64, records []byte, lastOffset int64) (*segment, int64, error) {
	if err := l.maybeRollLocked(cfg, nowMs, int64(len(records)), lastOffset); err != nil {
		return nil, 0, err
	}
	seg := l.active()
	pos0 := seg.size.Load()
	if end := pos0 + int64(len(records)); end > seg.reserved && end >= reserveFrom {
		l.reserveLocked(cfg, seg, pos0, end)
	}
	if _, err := seg.log.WriteAt(records, pos0); err != nil {
		if terr := seg.log.Truncate(pos0); terr != nil {
			l.fail("truncate after failed write", terr)
		}
		seg.reserved = 0 // the cut gave back the reservation
		l.logger().Error("append failed", "dir", l.dir, "err", err)
		return nil, 0, storageErr("write", err)
	}
	seg.dirty.Store(true)
	return seg, pos0, nil
}

// indexLocked is the first part of stage 5: the segment's in-memory state
// and indexes learn of each batch written at pos0 (as recovery rebuilds
// them). It returns the segment's new size; a failed index write only
// leaves the index sparser.
func (l *Log) indexLocked(cfg *Config, seg *segment, pos0 int64, records []byte) int64 {
	interval := int64(cfg.IndexIntervalBytes)
	p := pos0
	for pos := 0; pos < len(records); {
		b := records[pos:]
		size := int64(binary.BigEndian.Uint32(b[batch.OffLength:])) + 12
		h, _, _ := parseHdr(b, size)
		if err := seg.onBatch(p, size, h.lastOffset, h.maxTs, interval); err != nil {
			l.logger().Warn("index write failed; index stays sparser", "dir", l.dir, "err", err)
		}
		p += size
		pos += int(size)
	}
	return p
}

// publishLocked makes the written batches part of the log: the segment's
// size becomes end and its next offset next, the producer state learns of
// every batch with a producer id, and the log end offset moves to next.
//
// The producer state learns of data batches before the new end is
// published, so a transaction's first batch is never readable while the
// last stable offset still lies past it; and of markers after it, so a
// transaction is never stable before its marker is below the high
// watermark (Kafka's rule; see LastStableOffset). A marker's
// aborted-transaction entry is written before either (txnindex.go); an
// error writing it is returned (the data is published regardless).
//
// A batch after a marker that must see the marker applied — another
// marker (whose last stable offset must not count the ended transaction)
// or a batch of the marker's producer (whose transaction has ended) — has
// the end published up to it first, then the marker applied: a follower's
// append may hold many markers, and it then ends as the leader's appends
// of those batches one by one did.
func (l *Log) publishLocked(seg *segment, records []byte, markers []batch.Marker, end, next int64) error {
	seg.size.Store(end)
	seg.next.Store(next)
	if _, isNoop := l.guard.(noopGuard); isNoop {
		l.leo.Store(next)
		return nil
	}
	tg, _ := l.guard.(TxnGuard)
	var txnErr error
	var deferred []appliedMarker
	applyDeferred := func() {
		for _, d := range deferred {
			tg.MarkerAppended(d.m, d.off)
		}
		deferred = deferred[:0]
	}
	mi := 0
	prevEnd := int64(0) // one past the last offset of the batches before this one
	for pos := 0; pos < len(records); {
		h, _ := batch.ParseHeader(records[pos:])
		if len(deferred) > 0 && h.ProducerID >= 0 && mustSeeMarkers(h, deferred) {
			l.leo.Store(prevEnd)
			applyDeferred()
		}
		switch {
		case h.IsControl():
			m := markers[mi]
			mi++
			if tg != nil && h.ProducerID >= 0 {
				if txn, lso, ok := tg.PendingCompletion(m, h.BaseOffset); ok && txn.Aborted && txnErr == nil {
					txnErr = seg.appendAbortedTxn(l.fs, l.dir, AbortedTxn{ProducerID: txn.ProducerID,
						FirstOffset: txn.FirstOffset, LastOffset: txn.LastOffset, LastStableOffset: lso})
				}
				if txnErr == nil {
					deferred = append(deferred, appliedMarker{m, h.BaseOffset})
				}
			}
		case h.ProducerID >= 0:
			l.guard.Appended(h)
		}
		prevEnd = h.LastOffset() + 1
		pos += h.TotalSize()
	}
	l.leo.Store(next)
	applyDeferred()
	if len(markers) > 0 && l.hwFollowsEnd.Load() {
		l.forgetDecided(next) // the high watermark is the end
	}
	return txnErr
}

// mustSeeMarkers reports whether batch h (with a producer id) must see the
// markers before it in the same append applied: it is a marker too, or a
// batch of one of their producers.
func mustSeeMarkers(h batch.Header, deferred []appliedMarker) bool {
	if h.IsControl() {
		return true
	}
	for _, d := range deferred {
		if d.m.ProducerID == h.ProducerID {
			return true
		}
	}
	return false
}

// appliedMarker is a marker written at off, to apply to the TxnGuard once
// the end is published past it.
type appliedMarker struct {
	m   batch.Marker
	off int64
}

// finishLocked ends stage 5 and the append lock: a failed txnindex write
// fails the log (the marker is written but its index entry may not be; a
// restart rebuilds the entry from the marker); count more offsets count
// towards flush.messages, and needSync reports that it asks for an fsync;
// the leader-epoch-checkpoint is rewritten when the cache changed. Waiters
// are woken.
func (l *Log) finishLocked(cfg *Config, count int64, epochChanged bool, txnErr error) (needSync bool, err error) {
	if txnErr != nil {
		se := l.fail("txnindex", txnErr)
		l.mu.Unlock()
		l.notify()
		return false, se
	}
	if cfg.FlushMessages != math.MaxInt64 {
		l.unflushedMsgs += count
		if l.unflushedMsgs >= cfg.FlushMessages {
			l.unflushedMsgs = 0
			needSync = true
			l.noteSyncDue(l.leo.Load())
		}
	}
	var epochErr error
	if epochChanged {
		epochErr = l.epochs.store(l.fs, l.dir)
	}
	l.mu.Unlock()
	l.notify()
	if epochErr != nil {
		l.logger().Error("cannot write leader-epoch-checkpoint", "dir", l.dir, "err", epochErr)
	}
	return needSync, nil
}

// syncPolicy applies flush.messages once the append lock is released: when
// finishLocked asked for an fsync up to next, it is done now (group
// commit), or with deferSync left to the caller, whose SyncOffset is then
// next.
func (l *Log) syncPolicy(needSync, deferSync bool, next int64) (syncOffset int64, err error) {
	if !needSync {
		return 0, nil
	}
	if deferSync {
		return next, nil
	}
	return 0, l.syncTo(next)
}

// nextBatch returns the whole batch starting at pos (framing checks only).
func nextBatch(records []byte, pos int) ([]byte, error) {
	rest := records[pos:]
	if len(rest) > batch.OffMagic && int8(rest[batch.OffMagic]) != batch.Magic {
		_, err := batch.ParseHeader(rest) // the right error for magic 0/1 vs garbage
		if err == nil {
			err = &batch.Error{Code: batch.CorruptMessage, Msg: "bad magic"}
		}
		return nil, err
	}
	if len(rest) < batch.HeaderSize {
		return nil, &batch.Error{Code: batch.CorruptMessage, Msg: "truncated batch header"}
	}
	length := int64(int32(binary.BigEndian.Uint32(rest[batch.OffLength:])))
	if length < batch.MinLength {
		return nil, &batch.Error{Code: batch.CorruptMessage, Msg: "batch length below minimum"}
	}
	if length+12 > int64(len(rest)) {
		return nil, &batch.Error{Code: batch.CorruptMessage, Msg: "truncated batch"}
	}
	return rest[:length+12], nil
}

func batchErr(i int, err error) error {
	var be *batch.Error
	if errors.As(err, &be) {
		return &AppendError{Code: be.Code.KafkaCode(), Batch: i, Msg: be.Msg, RecordErrors: be.RecordErrors, Err: err}
	}
	return &AppendError{Code: CodeCorruptMessage, Batch: i, Msg: "invalid batch", Err: err}
}

// maxDecompressed bounds decompression when records must be read: 8×
// max.message.bytes, at least 1 MiB, at most 256 MiB.
func maxDecompressed(cfg *Config) int {
	return min(max(8*cfg.MaxMessageBytes, 1<<20), 256<<20)
}

// maybeRollLocked rolls the active segment if n more bytes ending at offset
// lastOffset would not fit it, or it is due by segment.ms.
func (l *Log) maybeRollLocked(cfg *Config, nowMs int64, n int64, lastOffset int64) error {
	s := l.active()
	size := s.size.Load()
	if size == 0 {
		if !s.fits(lastOffset) {
			// Cannot happen with records of one produce (<2^31 records fit
			// any empty segment's range); refuse rather than corrupt.
			return &AppendError{Code: CodeRecordListTooLarge, Batch: -1, Msg: "offset range too large for one segment"}
		}
		return nil
	}
	if size+n > cfg.SegmentBytes || size+n > segmentMaxPos || !s.fits(lastOffset) ||
		s.indexFull(cfg.SegmentIndexBytes) || l.dueByTime(s, cfg, nowMs) {
		return l.rollLocked(nowMs)
	}
	return nil
}

// dueByTime is segment.ms: the segment was created more than
// segment.ms - jitter ago. (Kafka measures from the first batch's
// timestamp; we use the segment's creation time on our own clock, so that a
// producer's clock cannot force a roll per append.)
func (l *Log) dueByTime(s *segment, cfg *Config, nowMs int64) bool {
	return s.size.Load() > 0 && nowMs-s.createdMs.Load() > cfg.SegmentMs-l.jitterMs.Load()
}

// Roll closes the active segment and starts a new one at the log end
// offset, unless the active segment is empty.
func (l *Log) Roll() error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.active().size.Load() == 0 {
		return nil
	}
	return l.rollLocked(l.m.now().UnixMilli())
}

// rollLocked finishes the active segment (pending index entries written,
// final time-index entry) and creates the next one, fsyncing the new files
// and the directory. The old segment's data is fsynced later by
// housekeeping (or by the next flush), as Kafka does, so the append path
// does not wait for it.
func (l *Log) rollLocked(nowMs int64) error {
	old := l.active()
	leo := l.leo.Load()
	if old.size.Load() == 0 && old.base == leo {
		return nil
	}
	if err := old.maybeAppendTimeEntry(); err != nil {
		l.logger().Warn("final time index entry not written", "dir", l.dir, "err", err)
	}
	if err := old.idx.writePending(); err != nil {
		l.logger().Warn("offset index flush failed", "dir", l.dir, "err", err)
	}
	if err := old.tidx.writePending(); err != nil {
		l.logger().Warn("time index flush failed", "dir", l.dir, "err", err)
	}
	old.idx.releasePending()
	old.tidx.releasePending()
	l.trimReservedLocked(old)
	s, err := createSegment(l.fs, l.m.files, l.dir, leo, nowMs)
	if err != nil {
		return storageErr("roll", err)
	}
	segs := append(append([]*segment(nil), l.segments()...), s)
	l.setSegments(segs)
	l.logger().Debug("rolled segment", "dir", l.dir, "base", leo)
	return nil
}

// segmentPaths lists the three files of the segment at prefix.
func segmentPaths(prefix string) []string {
	return []string{prefix + logSuffix, prefix + indexSuffix, prefix + timeIndexSuffix}
}

// retireSegmentsLocked removes segments from the log's files: renamed to
// .deleted and closed and removed after file.delete.delay.ms, so fetches in
// flight keep reading them.
func (l *Log) retireSegmentsLocked(gone []*segment) {
	if len(gone) == 0 {
		return
	}
	delay := l.config().FileDeleteDelayMs
	for _, s := range gone {
		var paths []string
		all := segmentPaths(s.prefix)
		if len(s.abortedTxns()) > 0 {
			all = append(all, txnIndexPath(s.prefix))
		}
		files := s.files()
		for j, p := range all {
			var f vfs.File
			if j < len(files) {
				f = files[j]
			}
			if err := renameFile(l.fs, f, p, p+deletedSuffix); err != nil {
				// Never schedule the live name for removal: a cleaned segment
				// with the same base offset is about to be renamed onto it
				// (ReplaceSegments). The file is only closed; a retired
				// segment left behind lies below the log start after the
				// next start and housekeeping deletes it again then.
				l.logger().Warn("cannot rename segment file for deletion; leaving it in place", "file", p, "err", err)
				continue
			}
			paths = append(paths, p+deletedSuffix)
		}
		l.m.scheduleDelete(delay, s.files(), paths)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.logger().Warn("cannot sync dir after deleting segments", "dir", l.dir, "err", err)
	}
}
