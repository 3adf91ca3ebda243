package log

import (
	"encoding/binary"
	"io"

	"github.com/sluice-broker/sluice/internal/batch"
)

// Read returns whole batches starting with the one containing offset, up to
// maxBytes in total, as file ranges (for sendfile). If the first batch is
// larger than maxBytes it is returned alone when minOneBatch is set (Kafka's
// rule for the first partition of a fetch) and nothing is returned
// otherwise. A read may span segments.
//
// An offset below the log start offset or above the log end offset is
// *OffsetOutOfRangeError (errors.Is ErrOffsetOutOfRange); offset == log end
// offset is an empty result. Read takes no lock and never blocks appends.
//
// Lifetime: a range's File is the manager's cached file (vfs.CachedFile):
// its descriptor may be closed while idle and is reopened on use, and a
// user that needs the raw descriptor (sendfile) pins it (vfs.Pinner) for
// the length of the transfer; a pinned descriptor is never closed.
// Segments deleted by retention, DeleteRecords or truncation are renamed
// .deleted (the cached file follows the rename) and removed after
// file.delete.delay.ms (default 60 s), so ranges stay readable at least that
// long. A deleted partition's files are removed at once: a range of it that
// is not pinned may fail to reopen. A suffix truncation (TruncateTo) cuts
// the active files in place: ranges past the new end become invalid at
// once, as in Kafka.
func (l *Log) Read(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	if err := l.ensureLoaded(); err != nil {
		return ReadResult{}, err
	}
	return l.read(offset, maxBytes, minOneBatch, readToHighWatermark)
}

// ReadToEnd is Read for a follower replicating the log: batches up to the
// log end offset, above the high watermark too (the leader's fetch path
// for replica fetches).
func (l *Log) ReadToEnd(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	if err := l.ensureLoaded(); err != nil {
		return ReadResult{}, err
	}
	return l.read(offset, maxBytes, minOneBatch, readToEnd)
}

// readMode is how far a read may go.
type readMode uint8

const (
	readToHighWatermark readMode = iota // consumers (read_uncommitted)
	readCommitted                       // read_committed consumers: the last stable offset
	readToEnd                           // followers: the log end offset
)

// ReadCommitted is Read for a read_committed consumer: only batches wholly
// below the last stable offset are returned (a batch is never split), and
// an offset between the last stable offset and the high watermark is an
// empty result, not an error. The aborted transactions to report with the
// data are AbortedTxns(offset, res.NextOffset).
func (l *Log) ReadCommitted(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	if err := l.ensureLoaded(); err != nil {
		return ReadResult{}, err
	}
	return l.read(offset, maxBytes, minOneBatch, readCommitted)
}

func (l *Log) read(offset int64, maxBytes int, minOneBatch bool, mode readMode) (ReadResult, error) {
	// The last stable offset is taken before the log end: it never
	// exceeds the end loaded after it.
	// The high watermark is loaded before the end, so it never exceeds it.
	lso := l.lastStableOffset()
	hw := max(l.HighWatermark(), lso)
	leo := l.leo.Load()
	start := l.logStart.Load()
	res := ReadResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: start, LogEndOffset: leo, NextOffset: offset}
	if offset < start || offset > leo {
		return res, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: start, LogEndOffset: leo}
	}
	upper := hw // batches must end below it: consumers see only what the in-sync replicas hold
	switch mode {
	case readCommitted:
		upper = lso
	case readToEnd:
		upper = leo
	}
	if offset >= upper {
		return res, nil
	}
	segs := l.segments()
	i := segmentFor(segs, offset)
	if i < 0 {
		i = 0
	}
	budget := int64(max(maxBytes, 0))
	var buf [batch.HeaderSize]byte
	for ; i < len(segs); i++ {
		s := segs[i]
		limit := s.size.Load()
		pos, h, ok, err := s.locate(offset, limit)
		if err != nil {
			return res, storageErr("read", err)
		}
		if !ok {
			continue // offset past this segment's data: the next one has it
		}
		first, end := pos, pos
		for h.base < leo && h.lastOffset < upper {
			if h.size > budget && !(minOneBatch && res.Size == 0 && end == first) {
				break
			}
			end += h.size
			budget -= h.size
			offset = h.lastOffset + 1
			res.NextOffset = offset
			if budget <= 0 || end >= limit {
				break
			}
			h, ok, err = readHdr(s.log, end, limit, &buf)
			if err != nil {
				return res, storageErr("read", err)
			}
			if !ok {
				break
			}
		}
		if end > first {
			res.Ranges = append(res.Ranges, FileRange{File: s.log, Pos: first, Size: end - first})
			res.Size += end - first
			if rel := offset - s.base; rel > 0 && rel <= 0xFFFFFFFF && end <= 0xFFFFFFFF {
				s.hint.Store(packHint(uint32(rel), uint32(end)))
			}
		}
		if end < limit || budget <= 0 || offset >= upper {
			break
		}
	}
	return res, nil
}

// ReadBytes is Read with minOneBatch set, copying the ranges into one
// slice: for tests and small internal readers. The result holds whole
// batches (possibly none at the log end).
func (l *Log) ReadBytes(offset int64, maxBytes int) ([]byte, error) {
	if err := l.ensureLoaded(); err != nil {
		return nil, err
	}
	return l.readBytes(offset, maxBytes)
}

// ReadBytesToEnd is ReadBytes up to the log end offset rather than the
// high watermark: what rebuilding the producer state reads (its
// transaction markers), which must see the whole log whatever the high
// watermark (unknown for a while after a replica restarts).
func (l *Log) ReadBytesToEnd(offset int64, maxBytes int) ([]byte, error) {
	if err := l.ensureLoaded(); err != nil {
		return nil, err
	}
	return l.readBytesToEnd(offset, maxBytes)
}

func (l *Log) readBytesToEnd(offset int64, maxBytes int) ([]byte, error) {
	r, err := l.read(offset, maxBytes, true, readToEnd)
	if err != nil {
		return nil, err
	}
	return r.Bytes()
}

func (l *Log) readBytes(offset int64, maxBytes int) ([]byte, error) {
	r, err := l.read(offset, maxBytes, true, readToHighWatermark)
	if err != nil {
		return nil, err
	}
	return r.Bytes()
}

// Bytes copies the ranges into one slice.
func (r ReadResult) Bytes() ([]byte, error) {
	out := make([]byte, r.Size)
	var n int64
	for _, fr := range r.Ranges {
		if _, err := fr.File.ReadAt(out[n:n+fr.Size], fr.Pos); err != nil && err != io.EOF {
			return nil, storageErr("read", err)
		}
		n += fr.Size
	}
	return out, nil
}

// WriteTo copies the ranges to w (tests and non-sendfile paths).
func (r ReadResult) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, fr := range r.Ranges {
		m, err := io.Copy(w, io.NewSectionReader(fr.File, fr.Pos, fr.Size))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// OffsetForTimestamp answers ListOffsets for a timestamp: the first offset
// (>= log start) whose record timestamp is >= ts, with that record's
// timestamp; ok=false if no record is that late. It looks the segment up by
// largest timestamp, uses the .timeindex, then decodes the one batch that
// holds the answer.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	if l.ensureLoaded() != nil {
		return -1, -1, false
	}
	start := l.logStart.Load()
	leo := l.leo.Load()
	for _, s := range l.segments() {
		if s.maxTs.Load() < ts || s.next.Load() <= start {
			continue
		}
		limit := s.size.Load()
		from := max(start, s.base)
		if e := make([]byte, timeIndexEntrySize); true {
			if found, err := s.tidx.floor(ts, timeEntryKey, e); err == nil && found {
				from = max(from, s.base+int64(binary.BigEndian.Uint32(e[8:12])))
			}
		}
		pos, h, found, err := s.locate(from, limit)
		if err != nil || !found {
			continue
		}
		var buf [batch.HeaderSize]byte
		for pos < limit && h.base < leo {
			if h.maxTs >= ts {
				off, t := l.firstRecordAtOrAfter(s, pos, h, ts, start)
				if off >= 0 {
					return off, t, true
				}
			}
			pos += h.size
			var ok bool
			h, ok, err = readHdr(s.log, pos, limit, &buf)
			if err != nil || !ok {
				break
			}
		}
	}
	return -1, -1, false
}

// firstRecordAtOrAfter decodes the batch at pos and returns the first
// record (offset >= start) with timestamp >= ts; for LogAppendTime batches
// every record has the batch's max timestamp.
func (l *Log) firstRecordAtOrAfter(s *segment, pos int64, h hdr, ts, start int64) (int64, int64) {
	b := make([]byte, h.size)
	if _, err := s.log.ReadAt(b, pos); err != nil && err != io.EOF {
		return -1, -1
	}
	bh, err := batch.ParseHeader(b)
	if err != nil {
		return -1, -1
	}
	if bh.TimestampType() == batch.LogAppendTime {
		return max(bh.BaseOffset, start), bh.MaxTimestamp
	}
	off, t := int64(-1), int64(-1)
	err = batch.ForEachRecord(b, maxDecompressed(l.config()), func(r *batch.Record) error {
		o := bh.Offset(r)
		if rt := bh.Timestamp(r); rt >= ts && o >= start {
			off, t = o, rt
			return io.EOF // stop
		}
		return nil
	})
	if off < 0 && err != nil && err != io.EOF {
		// Undecodable records: answer at batch granularity.
		return max(bh.BaseOffset, start), bh.MaxTimestamp
	}
	return off, t
}

// MaxTimestamp answers ListOffsets with timestamp -3 (MAX_TIMESTAMP): the
// offset and timestamp of the record with the largest timestamp (the first
// such record). ok=false for an empty log.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64, ok bool) {
	if l.ensureLoaded() != nil {
		return -1, -1, false
	}
	var best *segment
	for _, s := range l.segments() {
		if s.size.Load() > 0 && s.maxTs.Load() >= 0 && (best == nil || s.maxTs.Load() > best.maxTs.Load()) {
			best = s
		}
	}
	if best == nil {
		return -1, -1, false
	}
	ts := best.maxTs.Load()
	start := l.logStart.Load()
	pos, h, found, err := best.locate(best.maxTsOffset.Load(), best.size.Load())
	if err != nil || !found {
		return best.maxTsOffset.Load(), ts, true
	}
	if off, t := l.firstRecordAtOrAfter(best, pos, h, ts, start); off >= 0 {
		return off, t, true
	}
	return h.lastOffset, ts, true
}

// EndOffsetForLeaderEpoch answers OffsetForLeaderEpoch with Kafka's rules:
// for the latest epoch the log end offset; for an older one the start
// offset of the next larger epoch, paired with the largest epoch <= the
// requested one; (-1, -1) if the epoch is unknown or newer than any.
func (l *Log) EndOffsetForLeaderEpoch(epoch int32) (int32, int64) {
	if l.ensureLoaded() != nil {
		return -1, -1
	}
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// LatestEpoch returns the newest leader epoch recorded, or -1.
func (l *Log) LatestEpoch() int32 {
	if l.ensureLoaded() != nil {
		return -1
	}
	return l.epochs.latest()
}

// ScanBatches calls fn with the header of every batch whose last offset is
// >= from, in offset order, until fn returns false. It reads headers only
// (producer-state rebuild, tools). Batches appended during the scan may or
// may not be seen.
func (l *Log) ScanBatches(from int64, fn func(h batch.Header, at BatchPosition) bool) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	return l.scanBatches(from, fn)
}

func (l *Log) scanBatches(from int64, fn func(h batch.Header, at BatchPosition) bool) error {
	leo := l.leo.Load()
	segs := l.segments()
	i := max(segmentFor(segs, from), 0)
	var buf [batch.HeaderSize]byte
	for ; i < len(segs); i++ {
		s := segs[i]
		limit := s.size.Load()
		pos, _, ok, err := s.locate(from, limit)
		if err != nil {
			return storageErr("scan", err)
		}
		if !ok {
			continue
		}
		for pos < limit {
			if _, err := s.log.ReadAt(buf[:], pos); err != nil {
				return storageErr("scan", err)
			}
			h, err := batch.ParseHeader(buf[:])
			if err != nil || h.BaseOffset >= leo {
				return nil
			}
			if !fn(h, BatchPosition{Segment: s.base, Pos: pos}) {
				return nil
			}
			pos += int64(h.TotalSize())
		}
	}
	return nil
}
