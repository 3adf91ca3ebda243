package compact

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluice-broker/sluice/internal/batch"
)

// filter decides, batch by batch, what survives a cleaning pass. One filter
// serves one pass of one log; its buffers are reused between batches.
type filter struct {
	m *offsetMap
	// now is the pass's clock (ms): tombstones whose batch's delete horizon
	// is at or before it go; a batch first keeping a tombstone gets the
	// horizon now + deleteRetentionMs.
	now               int64
	deleteRetentionMs int64
	// lastOfProducer maps a producer id to its last record in the whole
	// log: its last data batch is kept, empty if need be, so the producer's
	// sequence state survives compaction; a producer whose last entry is a
	// marker of a new epoch keeps that marker, so its epoch still fences
	// (Kafka's RETAIN_EMPTY, both cases).
	lastOfProducer  map[int64]lastRecord
	maxDecompressed int
	txn             txnFilter
	txns            *cleanedTxns // txn when transactions are tracked, else nil

	out  []byte // rebuilt batch
	recs []byte // retained record bytes (before compression)

	stats passStats
}

// txnFilter is the seam for transactions (txn.go's cleanedTxns; a filter
// without one treats every batch as committed and keeps every marker). It
// is fed every batch of the pass in log order.
type txnFilter interface {
	// aborted reports whether a data batch belongs to an aborted
	// transaction (it is then dropped whole).
	aborted(h *batch.Header) bool
	// discardMarker reports whether a control batch (whole bytes b) no
	// longer guards data of its transaction; it then goes once its delete
	// horizon has passed.
	discardMarker(h *batch.Header, b []byte) bool
}

type noTransactions struct{}

func (noTransactions) aborted(*batch.Header) bool               { return false }
func (noTransactions) discardMarker(*batch.Header, []byte) bool { return false }

// passStats counts what a pass did.
type passStats struct {
	BatchesRead, BatchesWritten    int64
	RecordsRead, RecordsKept       int64
	BytesRead, BytesWritten        int64
	TombstonesKept, TombstonesDrop int64
	HorizonsStamped                int64
	EmptyProducerBatches           int64
	AbortedBatchesDropped          int64
	MarkersDropped                 int64
	MinPendingHorizon              int64 // smallest delete horizon still in the future, MaxInt64 if none
}

func newFilter(m *offsetMap, now, deleteRetentionMs int64, last map[int64]lastRecord, maxDecompressed int) *filter {
	f := &filter{m: m, now: now, deleteRetentionMs: deleteRetentionMs, lastOfProducer: last,
		maxDecompressed: maxDecompressed, txn: noTransactions{}}
	f.stats.MinPendingHorizon = math.MaxInt64
	return f
}

// horizon is the delete horizon a batch first keeping a tombstone gets.
func (f *filter) horizon() int64 {
	if f.deleteRetentionMs > math.MaxInt64-f.now {
		return math.MaxInt64
	}
	return f.now + f.deleteRetentionMs
}

// records returns the uncompressed record section of a whole batch.
func (f *filter) records(b []byte, h *batch.Header) ([]byte, error) {
	c := h.Compression()
	if c == batch.None {
		return b[batch.HeaderSize:], nil
	}
	return batch.Decompress(c, b[batch.HeaderSize:], f.maxDecompressed)
}

// checkBatch verifies a batch read from a segment before the cleaner trusts
// it: whole, magic 2, CRC-32C.
func checkBatch(b []byte) (batch.Header, error) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.TotalSize() != len(b) {
		return h, fmt.Errorf("batch at offset %d: length %d, have %d bytes", h.BaseOffset, h.TotalSize(), len(b))
	}
	if got := batch.ComputeCRC(b); got != h.CRC {
		return h, fmt.Errorf("batch at offset %d: CRC mismatch (stored %08x, computed %08x)", h.BaseOffset, h.CRC, got)
	}
	if h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return h, fmt.Errorf("batch at offset %d: record count %d does not fit last offset delta %d", h.BaseOffset, h.RecordCount, h.LastOffsetDelta)
	}
	return h, nil
}

// filterBatch returns what the cleaned segment holds in place of the whole
// batch b: b itself when every record survives and nothing needs stamping,
// a rebuilt batch (same base offset, last offset, producer fields, leader
// epoch and codec; survivors byte for byte, re-timed only when the delete
// horizon is stamped), an empty batch for a producer's last batch, or nil
// when the batch goes. The result aliases b or the filter's buffers: use it
// before the next call.
func (f *filter) filterBatch(b []byte) ([]byte, error) {
	h, err := checkBatch(b)
	if err != nil {
		return nil, err
	}
	f.stats.BatchesRead++
	f.stats.BytesRead += int64(len(b))
	if h.IsControl() {
		return f.filterMarker(b, &h)
	}
	isLast := false
	if r, ok := f.lastOfProducer[h.ProducerID]; ok && h.ProducerID >= 0 {
		isLast = r.dataOffset == h.LastOffset()
	}
	aborted := f.txn.aborted(&h)
	if aborted {
		f.stats.AbortedBatchesDropped++
	}
	hasHorizon := h.HasDeleteHorizon()
	horizonPassed := hasHorizon && f.now >= h.BaseTimestamp

	data, err := f.records(b, &h)
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	f.recs = f.recs[:0]
	var kept, tombstones int32
	maxTs := int64(math.MinInt64)
	lat := h.TimestampType() == batch.LogAppendTime
	err = forEachRawRecord(data, h.RecordCount, func(r *rawRecord) error {
		f.stats.RecordsRead++
		off := h.BaseOffset + int64(r.offsetDelta)
		if !f.retain(&h, r, off, aborted, horizonPassed) {
			if r.nullValue && r.key != nil {
				f.stats.TombstonesDrop++
			}
			return nil
		}
		kept++
		if r.nullValue {
			tombstones++
		}
		f.recs = append(f.recs, r.raw...)
		if !lat {
			maxTs = max(maxTs, h.BaseTimestamp+r.tsDelta)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	f.stats.RecordsKept += int64(kept)
	f.stats.TombstonesKept += int64(tombstones)

	stamp := tombstones > 0 && !hasHorizon
	if tombstones > 0 {
		hz := h.BaseTimestamp
		if stamp {
			hz = f.horizon()
		}
		f.stats.MinPendingHorizon = min(f.stats.MinPendingHorizon, hz)
	}
	switch {
	case kept == h.RecordCount && !stamp:
		return f.keep(b), nil
	case kept == 0 && isLast:
		f.stats.EmptyProducerBatches++
		return f.keep(emptyBatch(f.out[:0], &h)), nil
	case kept == 0:
		return nil, nil
	}

	// Rebuild: same header, survivors only.
	baseTs := h.BaseTimestamp
	attrs := h.Attributes
	if stamp {
		f.stats.HorizonsStamped++
		baseTs = f.horizon()
		attrs |= batch.AttrDeleteHorizon
		// Re-encode the survivors' timestamp deltas against the horizon.
		retimed := make([]byte, 0, len(f.recs)+int(kept)*8)
		_ = forEachRawRecord(f.recs, kept, func(r *rawRecord) error {
			retimed = appendRetimed(retimed, r, h.BaseTimestamp+r.tsDelta-baseTs)
			return nil
		})
		f.recs = retimed
	}
	if lat {
		maxTs = h.MaxTimestamp
	}
	section := f.recs
	if c := h.Compression(); c != batch.None {
		if section, err = batch.Compress(c, f.recs); err != nil {
			return nil, fmt.Errorf("batch at offset %d: recompress with %s: %w", h.BaseOffset, c, err)
		}
	}
	out := append(f.out[:0], b[:batch.HeaderSize]...)
	out = append(out, section...)
	if len(out)-12 > math.MaxInt32 {
		return nil, fmt.Errorf("batch at offset %d: rebuilt batch too large", h.BaseOffset)
	}
	be := binary.BigEndian
	be.PutUint32(out[batch.OffLength:], uint32(len(out)-12))
	be.PutUint16(out[batch.OffAttributes:], uint16(attrs))
	be.PutUint64(out[batch.OffBaseTimestamp:], uint64(baseTs))
	be.PutUint64(out[batch.OffMaxTimestamp:], uint64(maxTs))
	be.PutUint32(out[batch.OffRecordCount:], uint32(kept))
	// LastOffsetDelta, producer id/epoch/base sequence and leader epoch are
	// the original ones: a v2 batch keeps its offset range so producers'
	// sequence numbers still line up.
	batch.UpdateCRC(out)
	f.out = out
	return f.keep(out), nil
}

// filterMarker is Kafka's rule for transaction markers: a marker stays
// while data of its transaction is still in the log before it; once none
// is, it is stamped with a delete horizon (now + delete.retention.ms, as
// tombstones are) and removed by the first pass after the horizon, so a
// consumer that read the transaction's data within delete.retention.ms
// still sees its end.
//
// A marker that is its producer's last entry (see lastOfProducer) is kept
// whole whatever its transaction: it holds the epoch that fences the
// producer (Kafka keeps it too, as an empty control batch; kept whole, a
// rebuild of the producer state reads its epoch like any marker's).
func (f *filter) filterMarker(b []byte, h *batch.Header) ([]byte, error) {
	discard := f.txn.discardMarker(h, b)
	if r, ok := f.lastOfProducer[h.ProducerID]; ok && h.ProducerID >= 0 && r.dataOffset < 0 && r.epoch == h.ProducerEpoch {
		return f.keep(b), nil
	}
	if !discard {
		return f.keep(b), nil
	}
	if h.RecordCount == 0 {
		f.stats.MarkersDropped++
		return nil, nil
	}
	if h.HasDeleteHorizon() {
		if f.now >= h.BaseTimestamp {
			f.stats.MarkersDropped++
			return nil, nil
		}
		f.stats.MinPendingHorizon = min(f.stats.MinPendingHorizon, h.BaseTimestamp)
		return f.keep(b), nil
	}
	if h.Compression() != batch.None {
		return f.keep(b), nil // markers are never compressed; keep what we cannot rebuild
	}
	hz := f.horizon()
	f.recs = f.recs[:0]
	err := forEachRawRecord(b[batch.HeaderSize:], h.RecordCount, func(r *rawRecord) error {
		f.recs = appendRetimed(f.recs, r, h.BaseTimestamp+r.tsDelta-hz)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
	}
	out := append(f.out[:0], b[:batch.HeaderSize]...)
	out = append(out, f.recs...)
	be := binary.BigEndian
	be.PutUint32(out[batch.OffLength:], uint32(len(out)-12))
	be.PutUint16(out[batch.OffAttributes:], uint16(h.Attributes|batch.AttrDeleteHorizon))
	be.PutUint64(out[batch.OffBaseTimestamp:], uint64(hz))
	batch.UpdateCRC(out)
	f.out = out
	f.stats.HorizonsStamped++
	f.stats.MinPendingHorizon = min(f.stats.MinPendingHorizon, hz)
	return f.keep(out), nil
}

// keep counts a batch that goes into the cleaned segment.
func (f *filter) keep(b []byte) []byte {
	f.stats.BatchesWritten++
	f.stats.BytesWritten += int64(len(b))
	return b
}

// retain is Kafka's per-record rule: records the map did not look at stay;
// a keyless record goes (it cannot be produced to a compacted topic, but a
// topic switched to compact may hold old ones); otherwise the record must be
// the latest for its key, and a tombstone must not be past its batch's
// delete horizon.
func (f *filter) retain(h *batch.Header, r *rawRecord, off int64, aborted, horizonPassed bool) bool {
	if aborted {
		return false
	}
	if off > f.m.latest {
		return true
	}
	if r.key == nil {
		return false
	}
	if off < f.m.get(r.key) {
		return false
	}
	return !r.nullValue || !horizonPassed
}

// emptyBatch appends a batch holding no records that keeps h's offset
// range, producer id, epoch, base sequence, leader epoch and flags, with
// both timestamps set to h's max timestamp — what Kafka writes for a
// producer's last batch once compaction removed all its records.
func emptyBatch(dst []byte, h *batch.Header) []byte {
	attrs := h.Attributes & (batch.AttrTimestampType | batch.AttrTransactional | batch.AttrControl)
	return appendEmptyBatch(dst, h.BaseOffset, h.LastOffsetDelta, h.PartitionLeaderEpoch, attrs,
		h.MaxTimestamp, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
}

// appendEmptyBatch appends a record-less v2 batch.
func appendEmptyBatch(dst []byte, base int64, lastDelta, leaderEpoch int32, attrs int16, ts, pid int64, epoch int16, seq int32) []byte {
	at := len(dst)
	dst = append(dst, make([]byte, batch.HeaderSize)...)
	b := dst[at:]
	be := binary.BigEndian
	be.PutUint64(b[batch.OffBaseOffset:], uint64(base))
	be.PutUint32(b[batch.OffLength:], uint32(batch.MinLength))
	be.PutUint32(b[batch.OffPartitionLeaderEpoch:], uint32(leaderEpoch))
	b[batch.OffMagic] = batch.Magic
	be.PutUint16(b[batch.OffAttributes:], uint16(attrs))
	be.PutUint32(b[batch.OffLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(b[batch.OffBaseTimestamp:], uint64(ts))
	be.PutUint64(b[batch.OffMaxTimestamp:], uint64(ts))
	be.PutUint64(b[batch.OffProducerID:], uint64(pid))
	be.PutUint16(b[batch.OffProducerEpoch:], uint16(epoch))
	be.PutUint32(b[batch.OffBaseSequence:], uint32(seq))
	be.PutUint32(b[batch.OffRecordCount:], 0)
	batch.UpdateCRC(b)
	return dst
}
