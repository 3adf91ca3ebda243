package log

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// The cleaner's seam (the cleaner itself lives elsewhere): read a
// non-active segment's batches, build replacement segments, swap them in.

// SegmentBatches calls fn with every whole batch of the segment with the
// given base offset, in order; b is valid only during the call. The segment
// must not be the active one (its data is still growing).
func (l *Log) SegmentBatches(base int64, fn func(b []byte) error) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	segs := l.segments()
	i := segmentFor(segs, base)
	if i < 0 || segs[i].base != base {
		return fmt.Errorf("log: no segment with base offset %d", base)
	}
	if i == len(segs)-1 {
		return fmt.Errorf("log: segment %d is the active segment", base)
	}
	s := segs[i]
	limit := s.size.Load()
	var hb [batch.HeaderSize]byte
	var buf []byte
	for pos := int64(0); pos < limit; {
		h, ok, err := readHdr(s.log, pos, limit, &hb)
		if err != nil {
			return storageErr("read segment", err)
		}
		if !ok {
			return fmt.Errorf("log: segment %d: no valid batch at position %d", base, pos)
		}
		if int64(cap(buf)) < h.size {
			buf = make([]byte, h.size)
		}
		b := buf[:h.size]
		if _, err := s.log.ReadAt(b, pos); err != nil && err != io.EOF {
			return storageErr("read segment", err)
		}
		if err := fn(b); err != nil {
			return err
		}
		pos += h.size
	}
	return nil
}

// SegmentWriter builds one replacement segment in <base>.log.cleaned (and
// .index.cleaned, .timeindex.cleaned), with Kafka's index rules.
type SegmentWriter struct {
	l    *Log
	s    *segment
	last int64
	done bool
	// txns, when txnsSet, is the aborted-transaction index of the new
	// segment (SetAbortedTxns); otherwise ReplaceSegments carries the
	// replaced segments' entries over.
	txns    []AbortedTxn
	txnsSet bool
}

// SetAbortedTxns sets the aborted-transaction index of the new segment
// (entries in marker order): the cleaner keeps only the aborted
// transactions that still have data in the log. Without it,
// ReplaceSegments carries every entry of the replaced segments over.
func (w *SegmentWriter) SetAbortedTxns(ts []AbortedTxn) error {
	for i := 1; i < len(ts); i++ {
		if ts[i].LastOffset <= ts[i-1].LastOffset {
			return fmt.Errorf("log: segment writer: aborted transactions out of order")
		}
	}
	w.txns, w.txnsSet = ts, true
	return nil
}

// NewSegmentWriter starts a replacement segment with the given base offset.
func (l *Log) NewSegmentWriter(base int64) (*SegmentWriter, error) {
	if err := l.ensureLoaded(); err != nil {
		return nil, err
	}
	prefix := filepath.Join(l.dir, segmentName(base))
	lf, idx, tidx, err := openFiles(l.fs, l.m.files, prefix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, cleanedSuffix)
	if err != nil {
		return nil, storageErr("create cleaned segment", err)
	}
	s := newSegmentStruct(base, prefix, l.m.now().UnixMilli())
	s.log = lf
	s.idx = newIndexFile(idx, offsetIndexEntrySize, 0, nil)
	s.tidx = newIndexFile(tidx, timeIndexEntrySize, 0, nil)
	return &SegmentWriter{l: l, s: s, last: base - 1}, nil
}

// Append adds one whole, valid batch with its final offsets; offsets must
// increase and fit the segment.
func (w *SegmentWriter) Append(b []byte) error {
	h, ok, _ := parseHdr(b, int64(len(b)))
	if !ok || h.size != int64(len(b)) {
		return fmt.Errorf("log: segment writer: not one whole batch")
	}
	if h.base <= w.last || !w.s.fits(h.lastOffset) {
		return fmt.Errorf("log: segment writer: offset %d out of order or range", h.base)
	}
	pos := w.s.size.Load()
	if _, err := w.s.log.WriteAt(b, pos); err != nil {
		return storageErr("write cleaned segment", err)
	}
	if err := w.s.onBatch(pos, h.size, h.lastOffset, h.maxTs, int64(w.l.config().IndexIntervalBytes)); err != nil {
		return storageErr("write cleaned index", err)
	}
	w.s.size.Store(pos + h.size)
	w.s.next.Store(h.lastOffset + 1)
	w.last = h.lastOffset
	return nil
}

// Abort discards the replacement segment.
func (w *SegmentWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.s.close()
	for _, p := range append(segmentPaths(w.s.prefix), txnIndexPath(w.s.prefix)) {
		_ = w.l.fs.Remove(p + cleanedSuffix)
	}
}

// ReplaceSegments atomically replaces the consecutive non-active segments
// with base offsets old by the built segments, Kafka's way: the new files
// are fsynced, renamed .cleaned → .swap (highest base first), the old
// segments are retired (.deleted), the .swap files are renamed into place,
// with a directory fsync after each step. Recovery rolls back a swap that
// still has .cleaned files and completes one that has only .swap files.
func (l *Log) ReplaceSegments(old []int64, built []*SegmentWriter) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if len(old) == 0 {
		return fmt.Errorf("log: replace: no old segments")
	}
	segs := l.segments()
	first := segmentFor(segs, old[0])
	if first < 0 || first+len(old) >= len(segs) {
		return fmt.Errorf("log: replace: old segments must be existing non-active segments")
	}
	for k, b := range old {
		if segs[first+k].base != b {
			return fmt.Errorf("log: replace: segment %d is not consecutive", b)
		}
	}
	lo, hi := segs[first].base, segs[first+len(old)-1].next.Load()
	sort.Slice(built, func(i, j int) bool { return built[i].s.base < built[j].s.base })
	for _, w := range built {
		if w.done || w.s.base < lo || w.s.next.Load() > hi {
			return fmt.Errorf("log: replace: new segment %d outside [%d, %d)", w.s.base, lo, hi)
		}
	}
	// Everything up to the end of the replaced range becomes durable first,
	// so the gaps compaction leaves are always below the recovery point
	// (recovery treats a gap after a recovered segment as lost data).
	if err := l.flushUpTo(segs[first+len(old)].base); err != nil {
		return err
	}
	if err := l.m.writeCheckpoints(false); err != nil {
		return err
	}
	// The aborted-transaction entries of the replaced segments move to the
	// built segment holding their marker (or the first one, if the cleaner
	// dropped the marker's range). Keeping an entry whose data the cleaner
	// removed is harmless: readers only use it to drop records.
	txnsFor := make([][]AbortedTxn, len(built))
	for i, w := range built {
		if w.txnsSet {
			txnsFor[i] = w.txns
		}
	}
	for _, old := range segs[first : first+len(old)] {
		for _, t := range old.abortedTxns() {
			k := 0
			for k+1 < len(built) && built[k+1].s.base <= t.LastOffset {
				k++
			}
			if !built[k].txnsSet {
				txnsFor[k] = append(txnsFor[k], t)
			}
		}
	}
	for i, w := range built {
		if len(txnsFor[i]) > 0 {
			if err := vfs.WriteFileAtomic(l.fs, txnIndexPath(w.s.prefix)+cleanedSuffix, encodeTxnIndex(txnsFor[i]), 0o644); err != nil {
				return storageErr("write cleaned txnindex", err)
			}
		}
	}
	for _, w := range built {
		s := w.s
		_ = s.maybeAppendTimeEntry()
		for _, err := range []error{s.idx.sync(), s.tidx.sync(), s.log.Sync()} {
			if err != nil {
				return storageErr("sync cleaned segment", err)
			}
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("replace", err)
	}
	for i := len(built) - 1; i >= 0; i-- { // highest base first: see cleanupTempFiles
		if len(txnsFor[i]) > 0 {
			p := txnIndexPath(built[i].s.prefix)
			if err := l.fs.Rename(p+cleanedSuffix, p+swapSuffix); err != nil {
				return storageErr("replace", err)
			}
		}
		for j, p := range segmentPaths(built[i].s.prefix) {
			if err := renameFile(l.fs, built[i].s.files()[j], p+cleanedSuffix, p+swapSuffix); err != nil {
				return storageErr("replace", err)
			}
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("replace", err)
	}
	// Point of no return.
	l.retireSegmentsLocked(segs[first : first+len(old)])
	for i, w := range built {
		paths := segmentPaths(w.s.prefix)
		if len(txnsFor[i]) > 0 {
			paths = append(paths, txnIndexPath(w.s.prefix))
		}
		files := w.s.files()
		for j, p := range paths {
			var f vfs.File
			if j < len(files) {
				f = files[j]
			}
			if err := renameFile(l.fs, f, p+swapSuffix, p); err != nil {
				l.fail("replace", err)
				return storageErr("replace", err)
			}
		}
		w.s.setAbortedTxns(txnsFor[i])
		w.done = true
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.fail("replace", err)
		return storageErr("replace", err)
	}
	next := append([]*segment(nil), segs[:first]...)
	for _, w := range built {
		next = append(next, w.s)
	}
	next = append(next, segs[first+len(old):]...)
	l.setSegments(next)
	return nil
}
