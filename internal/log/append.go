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
func (l *Log) Append(records []byte, opts AppendOptions) (AppendResult, error) {
	res := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	cfg := l.config()
	nowMs := l.nowMs(opts.Now)

	// Validation needs no lock.
	if len(records) == 0 {
		return res, &AppendError{Code: CodeInvalidRecord, Batch: -1, Msg: "produce holds no record batch"}
	}
	if int64(len(records)) > cfg.SegmentBytes {
		return res, &AppendError{Code: CodeRecordListTooLarge, Batch: -1,
			Msg: "produce larger than segment.bytes"}
	}
	vopts := batch.ValidateOptions{
		RequireKeys:     cfg.Compact,
		AllowControl:    opts.AllowControl,
		MaxDecompressed: maxDecompressed(cfg),
		// A coordinator's batches are trusted and may carry sequence -1.
		FromLog: opts.Coordinator,
	}
	var markers []batch.Marker // the transaction markers, in batch order
	checkTs := cfg.MessageTimestampType == batch.CreateTime &&
		(cfg.TimestampBeforeMaxMs != math.MaxInt64 || cfg.TimestampAfterMaxMs != math.MaxInt64)
	// The latest timestamp is in the header; the earliest needs the records.
	vopts.CheckRecords = checkTs && cfg.TimestampBeforeMaxMs != math.MaxInt64
	var records64 int64
	var splices []splice // batches re-encoded for compression.type; nil on the usual path
	newSize := len(records)
	nb := 0
	for pos := 0; pos < len(records); nb++ {
		b, err := nextBatch(records, pos)
		if err != nil {
			return res, batchErr(nb, err)
		}
		if len(b) > cfg.MaxMessageBytes {
			return res, &AppendError{Code: CodeMessageTooLarge, Batch: nb, Msg: "batch larger than max.message.bytes"}
		}
		var sum batch.Summary
		if needsRecompress(b, cfg.Compression) {
			var out []byte
			if out, sum, err = recompress(b, cfg.Compression, cfg.CompressionLevel, vopts); err != nil {
				return res, recompressErr(nb, err)
			}
			if len(out) > cfg.MaxMessageBytes {
				return res, &AppendError{Code: CodeMessageTooLarge, Batch: nb,
					Msg: "batch larger than max.message.bytes once re-encoded with compression.type " + cfg.Compression.String()}
			}
			splices = append(splices, splice{from: pos, to: pos + len(b), data: out})
			newSize += len(out) - len(b)
		} else if sum, err = batch.Inspect(b, vopts); err != nil {
			return res, batchErr(nb, err)
		}
		if opts.Coordinator && !sum.Header.IsControl() &&
			(sum.Header.RecordCount < 1 || sum.Header.LastOffsetDelta != sum.Header.RecordCount-1) {
			return res, &AppendError{Code: CodeInvalidRecord, Batch: nb, Msg: "coordinator batch with inconsistent record count"}
		}
		if sum.Header.IsControl() {
			if !opts.AllowControl {
				return res, &AppendError{Code: CodeInvalidRecord, Batch: nb, Msg: "clients are not allowed to write control batches"}
			}
			m, err := batch.ParseMarker(b, vopts.MaxDecompressed)
			if err != nil {
				return res, batchErr(nb, err)
			}
			markers = append(markers, m)
		}
		if checkTs && sum.Header.RecordCount > 0 {
			if cfg.TimestampBeforeMaxMs != math.MaxInt64 && sum.MinTimestamp < nowMs-cfg.TimestampBeforeMaxMs {
				return res, &AppendError{Code: CodeInvalidTimestamp, Batch: nb,
					Msg: "record timestamp earlier than message.timestamp.before.max.ms allows"}
			}
			if cfg.TimestampAfterMaxMs != math.MaxInt64 && sum.MaxTimestamp > nowMs+cfg.TimestampAfterMaxMs {
				return res, &AppendError{Code: CodeInvalidTimestamp, Batch: nb,
					Msg: "record timestamp later than message.timestamp.after.max.ms allows"}
			}
		}
		records64 += int64(sum.Header.LastOffsetDelta) + 1
		pos += len(b)
	}
	if splices != nil {
		if int64(newSize) > cfg.SegmentBytes {
			return res, &AppendError{Code: CodeRecordListTooLarge, Batch: -1,
				Msg: "produce larger than segment.bytes once re-encoded with compression.type " + cfg.Compression.String()}
		}
		records = applySplices(records, splices, newSize)
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return res, ErrClosed
	}
	if se := l.failed.Load(); se != nil {
		l.mu.Unlock()
		return res, se
	}
	// Idempotence: a retried batch answers with its original offsets.
	tg, _ := l.guard.(TxnGuard)
	if _, isNoop := l.guard.(noopGuard); !isNoop {
		mi := 0
		for pos := 0; pos < len(records); {
			h, _ := batch.ParseHeader(records[pos:])
			if h.ProducerID >= 0 {
				var dup bool
				var base, last int64
				var err error
				switch {
				case h.IsControl():
					if tg != nil {
						err = tg.CheckMarker(markers[mi])
					}
				case opts.Coordinator:
					if tg != nil {
						err = tg.CheckCoordinator(h)
					}
				default:
					dup, base, last, err = l.guard.Check(h)
				}
				if err != nil {
					l.mu.Unlock()
					var ae *AppendError
					if !errors.As(err, &ae) {
						// Keep the guard's own Kafka code when it has one.
						err = &AppendError{Code: KafkaCode(err), Batch: -1, Msg: err.Error(), Err: err}
					}
					return res, err
				}
				if dup {
					l.mu.Unlock()
					res.BaseOffset, res.LastOffset, res.Duplicate = base, last, true
					res.LogStartOffset = l.logStart.Load()
					// A retry answered while the original's fsync is
					// still pending (its answer lost on another
					// connection) must not be acknowledged earlier.
					if cfg.FlushMessages != math.MaxInt64 && l.durable.Load() <= last {
						if opts.DeferSync {
							res.SyncOffset = last + 1
						} else if err := l.syncTo(last + 1); err != nil {
							return res, err
						}
					}
					return res, nil
				}
			}
			if h.IsControl() {
				mi++
			}
			pos += h.TotalSize()
		}
	}

	leo := l.leo.Load()
	if err := l.maybeRollLocked(cfg, nowMs, int64(len(records)), leo+records64-1); err != nil {
		l.mu.Unlock()
		return res, err
	}
	seg := l.active()
	pos0 := seg.size.Load()

	// Assign offsets in place.
	next := leo
	logAppend := cfg.MessageTimestampType == batch.LogAppendTime
	for pos := 0; pos < len(records); {
		b := records[pos:]
		size := int(binary.BigEndian.Uint32(b[batch.OffLength:])) + 12
		b = b[:size]
		batch.SetBaseOffset(b, next)
		batch.SetPartitionLeaderEpoch(b, opts.LeaderEpoch)
		if logAppend {
			batch.SetLogAppendTime(b, nowMs)
		}
		next += int64(binary.BigEndian.Uint32(b[batch.OffLastOffsetDelta:])) + 1
		pos += size
	}

	if _, err := seg.log.WriteAt(records, pos0); err != nil {
		// Cut back whatever part landed; if even that fails, the segment
		// may hold garbage after its published end: stop appending.
		if terr := seg.log.Truncate(pos0); terr != nil {
			l.fail("truncate after failed write", terr)
		}
		l.mu.Unlock()
		l.logger.Error("append failed", "dir", l.dir, "err", err)
		return res, storageErr("write", err)
	}
	seg.dirty.Store(true)

	interval := int64(cfg.IndexIntervalBytes)
	p := pos0
	for pos := 0; pos < len(records); {
		b := records[pos:]
		size := int64(binary.BigEndian.Uint32(b[batch.OffLength:])) + 12
		h, _, _ := parseHdr(b, size)
		if err := seg.onBatch(p, size, h.lastOffset, h.maxTs, interval); err != nil {
			l.logger.Warn("index write failed; index stays sparser", "dir", l.dir, "err", err)
		}
		p += size
		pos += int(size)
	}
	epochChanged := l.epochs.assign(opts.LeaderEpoch, leo)
	seg.size.Store(p)
	seg.next.Store(next)

	// The producer state learns of data batches before the new end is
	// published, so a transaction's first batch is never readable while
	// the last stable offset still lies past it; and of markers after it,
	// so a transaction is never stable before its marker is below the
	// high watermark (Kafka's rule; see LastStableOffset). A marker's
	// aborted-transaction entry is written before either (txnindex.go).
	var txnErr error
	type appliedMarker struct {
		m   batch.Marker
		off int64
	}
	var deferred []appliedMarker
	applyDeferred := func() {
		for _, d := range deferred {
			tg.MarkerAppended(d.m, d.off)
		}
		deferred = deferred[:0]
	}
	if _, isNoop := l.guard.(noopGuard); !isNoop {
		mi := 0
		for pos := 0; pos < len(records); {
			h, _ := batch.ParseHeader(records[pos:])
			for _, d := range deferred {
				if h.ProducerID >= 0 && d.m.ProducerID == h.ProducerID {
					// Another batch of that producer in the same append
					// must see its transaction ended.
					applyDeferred()
					break
				}
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
			pos += h.TotalSize()
		}
	}
	l.leo.Store(next)
	applyDeferred()
	if txnErr != nil {
		// The marker is written but its index entry may not be: stop
		// appending; a restart rebuilds the entry from the marker.
		se := l.fail("txnindex", txnErr)
		l.mu.Unlock()
		l.notify()
		return res, se
	}
	needSync := false
	if cfg.FlushMessages != math.MaxInt64 {
		l.unflushedMsgs += records64
		if l.unflushedMsgs >= cfg.FlushMessages {
			l.unflushedMsgs = 0
			needSync = true
		}
	}
	var epochErr error
	if epochChanged {
		epochErr = l.epochs.store(l.fs, l.dir)
	}
	l.mu.Unlock()
	l.notify()

	res.BaseOffset, res.LastOffset = leo, next-1
	res.LogStartOffset = l.logStart.Load()
	if logAppend {
		res.LogAppendTime = nowMs
	}
	if epochErr != nil {
		l.logger.Error("cannot write leader-epoch-checkpoint", "dir", l.dir, "err", epochErr)
	}
	if needSync {
		if opts.DeferSync {
			res.SyncOffset = next
			return res, nil
		}
		if err := l.syncTo(next); err != nil {
			return res, err
		}
	}
	return res, nil
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
		l.logger.Warn("final time index entry not written", "dir", l.dir, "err", err)
	}
	if err := old.idx.writePending(); err != nil {
		l.logger.Warn("offset index flush failed", "dir", l.dir, "err", err)
	}
	if err := old.tidx.writePending(); err != nil {
		l.logger.Warn("time index flush failed", "dir", l.dir, "err", err)
	}
	old.idx.releasePending()
	old.tidx.releasePending()
	s, err := createSegment(l.fs, l.dir, leo, nowMs)
	if err != nil {
		return storageErr("roll", err)
	}
	segs := append(append([]*segment(nil), l.segments()...), s)
	l.setSegments(segs)
	l.logger.Debug("rolled segment", "dir", l.dir, "base", leo)
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
		for _, p := range all {
			if err := l.fs.Rename(p, p+deletedSuffix); err != nil {
				// Never schedule the live name for removal: a cleaned segment
				// with the same base offset is about to be renamed onto it
				// (ReplaceSegments). The file is only closed; a retired
				// segment left behind lies below the log start after the
				// next start and housekeeping deletes it again then.
				l.logger.Warn("cannot rename segment file for deletion; leaving it in place", "file", p, "err", err)
				continue
			}
			paths = append(paths, p+deletedSuffix)
		}
		l.m.scheduleDelete(delay, []vfs.File{s.log, s.idx.f, s.tidx.f}, paths)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.logger.Warn("cannot sync dir after deleting segments", "dir", l.dir, "err", err)
	}
}
