package log

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// loadParams are the manager's inputs for opening one partition directory.
type loadParams struct {
	clean         bool  // the data dir had a clean-shutdown marker
	recoveryPoint int64 // from recovery-point-offset-checkpoint, 0 if absent
	logStart      int64 // from log-start-offset-checkpoint, -1 if absent
}

// load opens (or initialises) the directory's segments. After an unclean
// shutdown every segment from the one holding the recovery point on is
// re-validated batch by batch (CRC-32C, offsets, lengths); the first bad
// batch and everything after it is cut off and the indexes are rebuilt.
func (l *Log) load(p loadParams) error {
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	ents, err := l.cleanupTempFiles()
	if err != nil {
		return err
	}
	if ents == nil { // something was cleaned up: list again
		if ents, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	bases := segmentBases(ents)
	nowMs := l.m.now().UnixMilli()
	var segs []*segment
	closeAll := func() {
		for _, s := range segs {
			s.close()
		}
	}
	// Which segments to re-validate: after a crash, the one holding the
	// recovery point and everything after it.
	recoverFrom := len(bases)
	if !p.clean {
		recoverFrom = 0
		for i, b := range bases {
			if b <= p.recoveryPoint {
				recoverFrom = i
			}
		}
	}
	cfg := l.config()
	for i, base := range bases {
		s, err := openSegment(l.fs, l.m.files, l.dir, base, nowMs)
		if err != nil {
			closeAll()
			return err
		}
		if len(segs) > 0 && base < segs[len(segs)-1].next.Load() {
			// Overlaps its predecessor: not something we write. Treat like a
			// corrupt tail from here on.
			l.logger().Warn("segment overlaps its predecessor; deleting it and everything after", "dir", l.dir, "segment", base)
			s.close()
			l.removeSegmentFiles(bases[i:])
			break
		}
		full := i >= recoverFrom
		if !full {
			ok, err := s.loadClean(cfg)
			if err != nil {
				s.close()
				closeAll()
				return err
			}
			full = !ok
			if full {
				l.logger().Warn("segment indexes or tail inconsistent; re-validating", "dir", l.dir, "segment", base)
			}
		}
		if full {
			truncated, err := s.recover(cfg)
			if err != nil {
				s.close()
				closeAll()
				return err
			}
			if truncated {
				l.logger().Warn("cut off a corrupt or torn tail", "dir", l.dir, "segment", base, "valid_bytes", s.size.Load())
				segs = append(segs, s)
				if i+1 < len(bases) {
					l.logger().Warn("deleting segments after a corrupt tail", "dir", l.dir, "count", len(bases)-i-1)
					l.removeSegmentFiles(bases[i+1:])
				}
				break
			}
			if i >= recoverFrom && !cfg.Compact && i+1 < len(bases) && s.next.Load() != bases[i+1] {
				// A segment after the recovery point that ends short of its
				// successor lost unsynced data; what follows would leave
				// phantom offsets: cut it. (The cleaner's gaps are below the
				// checkpointed recovery point — ReplaceSegments flushes and
				// checkpoints first — and compacted logs are exempt in case
				// the checkpoint was lost.)
				l.logger().Warn("segment lost its unsynced tail; deleting the segments after it", "dir", l.dir,
					"segment", base, "next_offset", s.next.Load(), "following_segment", bases[i+1])
				segs = append(segs, s)
				l.removeSegmentFiles(bases[i+1:])
				break
			}
		}
		segs = append(segs, s)
	}
	// Drop empty non-last segments is not needed: a roll only happens on
	// append, so an empty segment can only be the last one.
	leo := int64(0)
	if n := len(segs); n > 0 {
		leo = segs[n-1].next.Load()
	}
	logStart := p.logStart
	if len(segs) > 0 && logStart < segs[0].base {
		logStart = segs[0].base
	}
	if logStart < 0 {
		logStart = 0
	}
	if len(segs) == 0 || logStart > leo {
		// Nothing on disk, or the start offset is past everything we have
		// (a DeleteRecords checkpointed before its data was durable): start
		// an empty segment at logStart so offsets are never reused.
		for _, s := range segs {
			s.close()
			l.removeSegmentFiles([]int64{s.base})
		}
		segs = nil
		s, err := createSegment(l.fs, l.m.files, l.dir, logStart, nowMs)
		if err != nil {
			return err
		}
		segs = append(segs, s)
		leo = logStart
	}
	l.setSegments(segs)
	for _, s := range segs {
		if err := s.loadTxnIndex(l.fs, s.next.Load()); err != nil {
			// The producer state's rebuild restores entries from markers.
			l.logger().Warn("aborted-transaction index unreadable", "dir", l.dir, "segment", s.base, "err", err)
		}
	}
	l.leo.Store(leo)
	l.endFloor.note(leo)
	l.logStart.Store(logStart)
	l.checkpointChanged()
	rp := leo
	if !p.clean {
		rp = min(p.recoveryPoint, leo)
		// Everything re-validated is now also durable? No: it was read from
		// the page cache. Flush it so the recovery point can move.
		if err := l.flushUpTo(leo); err != nil {
			return err
		}
		rp = leo
	}
	l.recoveryPoint.Store(rp)
	l.checkpointChanged() // again: a checkpoint compared before the store would have missed it
	l.durable.Store(rp)
	l.lastFlushMs.Store(nowMs)
	if err := l.epochs.load(l.fs, l.dir); err != nil {
		l.logger().Warn("leader-epoch-checkpoint unreadable; starting empty", "dir", l.dir, "err", err)
	}
	changed := l.epochs.truncateFromEnd(leo)
	if l.epochs.truncateFromStart(logStart) {
		changed = true
	}
	if changed {
		if err := l.epochs.store(l.fs, l.dir); err != nil {
			return err
		}
	}
	return nil
}

// cleanupTempFiles removes what an interrupted operation left behind and
// completes or rolls back an interrupted segment swap, as Kafka does:
// .deleted and .tmp files are removed; .cleaned files mean the swap never
// passed its point of no return, so they and every .swap at or above the
// lowest .cleaned base are removed; a remaining .swap log replaces the
// segments its offsets cover and is renamed into place.
//
// It returns the directory's listing when it found nothing to do (so that
// load does not read the directory twice), else nil.
func (l *Log) cleanupTempFiles() ([]os.DirEntry, error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	minCleaned := int64(math.MaxInt64)
	var swaps []int64
	found := false // anything to clean up; else the directory is left alone (no sync)
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, vfs.TmpSuffix):
			_ = l.fs.Remove(filepath.Join(l.dir, name))
			found = true
		case strings.HasSuffix(name, cleanedSuffix):
			if b, ok := parseBase(strings.TrimSuffix(name, cleanedSuffix)); ok && b < minCleaned {
				minCleaned = b
			}
			_ = l.fs.Remove(filepath.Join(l.dir, name))
			found = true
		case strings.HasSuffix(name, swapSuffix):
			if b, ok := parseBase(strings.TrimSuffix(name, swapSuffix)); ok && strings.HasSuffix(name, logSuffix+swapSuffix) {
				swaps = append(swaps, b)
			}
			found = true
		}
	}
	if !found {
		return ents, nil
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, b := range swaps {
		prefix := filepath.Join(l.dir, segmentName(b))
		if b >= minCleaned {
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				_ = l.fs.Remove(prefix + suf + swapSuffix)
			}
			continue
		}
		if err := l.completeSwap(b); err != nil {
			return nil, err
		}
	}
	// Index files whose .swap twin lingers are stale either way.
	ents, err = l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), swapSuffix) {
			_ = l.fs.Remove(filepath.Join(l.dir, e.Name()))
		}
	}
	return nil, l.fs.SyncDir(l.dir)
}

// completeSwap finishes an interrupted ReplaceSegments for the .swap
// segment at base: the segments it covers go, it takes their place.
func (l *Log) completeSwap(base int64) error {
	prefix := filepath.Join(l.dir, segmentName(base))
	f, err := l.fs.OpenFile(prefix+logSuffix+swapSuffix, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	next, _, err := scanValid(f, base)
	f.Close()
	if err != nil {
		return err
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	var covered []int64
	for _, b := range bases {
		if b >= base && b < next {
			covered = append(covered, b)
		}
	}
	l.removeSegmentFiles(covered)
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		_ = l.fs.Remove(prefix + suf + swapSuffix) // rebuilt on open
	}
	// The aborted-transaction index cannot be rebuilt from the segment
	// alone: keep the cleaner's.
	if err := l.fs.Rename(prefix+txnIndexSuffix+swapSuffix, prefix+txnIndexSuffix); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := l.fs.Rename(prefix+logSuffix+swapSuffix, prefix+logSuffix); err != nil {
		return err
	}
	// The renamed segment's indexes are rebuilt by a full recovery: make
	// sure the stale ones are gone.
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		_ = l.fs.Remove(prefix + suf)
	}
	l.logger().Info("completed an interrupted segment swap", "dir", l.dir, "segment", base, "replaced", len(covered))
	return nil
}

// scanValid walks f's batches from the start, validating each, and returns
// the next offset after the last valid one and the valid size.
func scanValid(f vfs.File, base int64) (next, size int64, err error) {
	var n int64
	next = base
	err = walkValid(f, base, false, func(pos int64, b []byte, h hdr) error {
		next = h.lastOffset + 1
		n = pos + h.size
		return nil
	})
	return next, n, err
}

// listSegments returns the base offsets of the directory's .log files.
func (l *Log) listSegments() ([]int64, error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	return segmentBases(ents), nil
}

// segmentBases returns the base offsets of the .log files of a listing,
// ascending.
func segmentBases(ents []os.DirEntry) []int64 {
	var bases []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, logSuffix) {
			continue
		}
		if b, ok := parseBase(strings.TrimSuffix(name, logSuffix)); ok {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases
}

func parseBase(s string) (int64, bool) {
	s = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, logSuffix), indexSuffix), timeIndexSuffix)
	if len(s) != 20 {
		return 0, false
	}
	b, err := strconv.ParseInt(s, 10, 64)
	if err != nil || b < 0 {
		return 0, false
	}
	return b, true
}

// removeSegmentFiles removes segments' files right away (recovery only).
func (l *Log) removeSegmentFiles(bases []int64) {
	for _, b := range bases {
		prefix := filepath.Join(l.dir, segmentName(b))
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if err := l.fs.Remove(prefix + suf); err != nil && !os.IsNotExist(err) {
				l.logger().Warn("cannot remove segment file", "file", prefix+suf, "err", err)
			}
		}
	}
	_ = l.fs.SyncDir(l.dir)
}

// openSegment opens an existing segment's files (creating missing index
// files empty); loadClean or recover fills in its state.
func openSegment(fsys vfs.FS, files *vfs.FileCache, dir string, base int64, nowMs int64) (*segment, error) {
	prefix := filepath.Join(dir, segmentName(base))
	log, idx, tidx, err := openFiles(fsys, files, prefix, os.O_RDWR, "")
	if err != nil {
		return nil, err
	}
	s := newSegmentStruct(base, prefix, segmentStartMs(log, nowMs))
	s.log = log
	s.idx = newIndexFile(idx, offsetIndexEntrySize, 0, nil)
	s.tidx = newIndexFile(tidx, timeIndexEntrySize, 0, nil)
	return s, nil
}

// segmentStartMs is when an existing segment counts as started for
// segment.ms, so that a restart does not reset the clock (an idle segment
// must still roll, and so become compactable, on time): the max timestamp of
// its first batch, as Kafka measures the roll, or the file's modification
// time if that is missing or in the future; now for an empty segment.
func segmentStartMs(f vfs.File, nowMs int64) int64 {
	fi, err := f.Stat() // first: an empty segment is not opened
	if err != nil || fi.Size() == 0 {
		return nowMs
	}
	var h [batch.HeaderSize]byte
	if _, err := f.ReadAt(h[:], 0); err == nil {
		if hd, err := batch.ParseHeader(h[:]); err == nil && hd.MaxTimestamp > 0 && hd.MaxTimestamp <= nowMs {
			return hd.MaxTimestamp
		}
	}
	if fi.ModTime().UnixMilli() <= nowMs {
		return fi.ModTime().UnixMilli()
	}
	return nowMs
}

// truncateIfLonger cuts f to size unless it already has that size (a
// restart of many partitions skips a write per index).
func truncateIfLonger(f vfs.File, size int64) error {
	if fi, err := f.Stat(); err == nil && fi.Size() == size {
		return nil
	}
	return f.Truncate(size)
}

// loadClean trusts the segment (it is below the recovery point or the
// shutdown was clean) but checks its indexes and walks the batch headers
// after the last index entry to find the end. ok=false means something did
// not add up and the segment needs a full recovery.
func (s *segment) loadClean(cfg *Config) (bool, error) {
	fi, err := s.log.Stat()
	if err != nil {
		return false, err
	}
	fileSize := fi.Size()
	n, last, complete, err := loadIndexEntries(s.idx.f, offsetIndexEntrySize, offsetEntryKey, func(e []byte) bool {
		return int64(binary.BigEndian.Uint32(e[4:8])) < fileSize
	})
	if err != nil {
		return false, err
	}
	if !complete {
		return false, nil
	}
	if err := truncateIfLonger(s.idx.f, int64(n*offsetIndexEntrySize)); err != nil { // trims a preallocated file
		return false, err
	}
	s.idx = newIndexFile(s.idx.f, offsetIndexEntrySize, n, last)
	tn, tlast, tcomplete, err := loadIndexEntries(s.tidx.f, timeIndexEntrySize, timeEntryKey, func([]byte) bool { return true })
	if err != nil {
		return false, err
	}
	if !tcomplete {
		return false, nil
	}
	if err := truncateIfLonger(s.tidx.f, int64(tn*timeIndexEntrySize)); err != nil {
		return false, err
	}
	s.tidx = newIndexFile(s.tidx.f, timeIndexEntrySize, tn, tlast)
	// Walk from the last indexed batch to the end.
	var buf [batch.HeaderSize]byte
	pos, next := int64(0), s.base
	if last != nil {
		pos = int64(binary.BigEndian.Uint32(last[4:8]))
	}
	first := true
	for pos < fileSize {
		h, ok, err := readHdr(s.log, pos, fileSize, &buf)
		if err != nil {
			return false, err
		}
		if !ok || h.base < next && !first || h.base < s.base || !s.fits(h.lastOffset) {
			return false, nil
		}
		if pos == 0 && h.maxTs >= 0 {
			s.rollTs.Store(h.maxTs)
		}
		if first && last != nil && h.lastOffset != s.base+offsetEntryKey(last) {
			return false, nil // index entry does not point at its batch
		}
		first = false
		next = h.lastOffset + 1
		if h.maxTs > s.maxTs.Load() {
			s.maxTs.Store(h.maxTs)
			s.maxTsOffset.Store(h.lastOffset)
		}
		s.bytesSinceIndex += h.size
		pos += h.size
	}
	if s.rollTs.Load() < 0 && fileSize > 0 {
		if h, ok, err := readHdr(s.log, 0, fileSize, &buf); err == nil && ok && h.maxTs >= 0 {
			s.rollTs.Store(h.maxTs)
		}
	}
	if tlast != nil {
		ts, rel := timeEntryKey(tlast), int64(binary.BigEndian.Uint32(tlast[8:12]))
		if s.base+rel >= next {
			return false, nil
		}
		if ts > s.maxTs.Load() {
			s.maxTs.Store(ts)
			s.maxTsOffset.Store(s.base + rel)
		}
	}
	s.size.Store(fileSize)
	s.next.Store(next)
	_ = cfg
	return true, nil
}

// recover re-validates every batch of the segment, rebuilds both indexes
// from scratch and cuts the file after the last valid batch. It reports
// whether anything was cut.
func (s *segment) recover(cfg *Config) (bool, error) {
	if empty, logInfo, err := s.allEmpty(); err != nil {
		return false, err
	} else if empty {
		// An empty segment (the active segment of an idle partition) has
		// no batch to validate and empty indexes: nothing to rewrite, no
		// file to open, nothing to sync.
		s.next.Store(s.base)
		s.maxTs.Store(-1)
		s.maxTsOffset.Store(s.base - 1)
		s.rollTs.Store(-1)
		s.bytesSinceIndex = 0
		s.size.Store(0)
		// A crash may have lost the file's size but kept blocks reserved
		// past it (reserve.go); this segment may never roll to give them
		// back.
		if vfs.BlocksPastEnd(logInfo) {
			if err := s.log.Truncate(0); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if err := truncateIfLonger(s.idx.f, 0); err != nil {
		return false, err
	}
	if err := truncateIfLonger(s.tidx.f, 0); err != nil {
		return false, err
	}
	s.idx = newIndexFile(s.idx.f, offsetIndexEntrySize, 0, nil)
	s.tidx = newIndexFile(s.tidx.f, timeIndexEntrySize, 0, nil)
	s.next.Store(s.base)
	s.maxTs.Store(-1)
	s.maxTsOffset.Store(s.base - 1)
	s.rollTs.Store(-1)
	s.bytesSinceIndex = 0
	interval := int64(cfg.IndexIntervalBytes)
	var valid int64
	err := walkValid(s.log, s.base, !cfg.Compact, func(pos int64, b []byte, h hdr) error {
		if err := s.onBatch(pos, h.size, h.lastOffset, h.maxTs, interval); err != nil {
			return err
		}
		s.next.Store(h.lastOffset + 1)
		valid = pos + h.size
		return nil
	})
	if err != nil {
		return false, err
	}
	fi, err := s.log.Stat()
	if err != nil {
		return false, err
	}
	truncated := fi.Size() > valid
	// The cut also gives back blocks reserved past the end before the
	// crash (reserve.go); without a cut, a truncate to the file's own size.
	if truncated || vfs.BlocksPastEnd(fi) {
		if err := s.log.Truncate(valid); err != nil {
			return false, err
		}
	}
	s.size.Store(valid)
	if err := s.idx.writePending(); err != nil {
		return false, err
	}
	if err := s.tidx.writePending(); err != nil {
		return false, err
	}
	s.dirty.Store(true)
	s.idxDirty.Store(true)
	return truncated, nil
}

// allEmpty reports whether the segment's .log and both indexes are empty
// files (stat by name: nothing is opened); logInfo is the .log's.
func (s *segment) allEmpty() (empty bool, logInfo os.FileInfo, err error) {
	for i, f := range []vfs.File{s.log, s.idx.f, s.tidx.f} {
		fi, err := f.Stat()
		if err != nil {
			return false, nil, err
		}
		if i == 0 {
			logInfo = fi
		}
		if fi.Size() != 0 {
			return false, nil, nil
		}
	}
	return true, logInfo, nil
}

// walkValid calls fn for each valid batch of f from position 0 and stops at
// the first invalid one (bad header, length past the end, bad CRC, offsets
// going backwards or not fitting the segment). b is only valid during fn.
//
// With dense set (logs that are not compacted) every batch must start right
// after its predecessor: baseOffset is not covered by the CRC, so a garbled
// torn tail could otherwise pass as a batch with a bogus offset.
func walkValid(f vfs.File, base int64, dense bool, fn func(pos int64, b []byte, h hdr) error) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	fileSize := fi.Size()
	buf := make([]byte, min(1<<20, max(fileSize, batch.HeaderSize)))
	var bufPos, bufLen int64 // buf holds file bytes [bufPos, bufPos+bufLen)
	fill := func(pos, n int64) ([]byte, error) {
		if pos >= bufPos && pos+n <= bufPos+bufLen {
			return buf[pos-bufPos : pos-bufPos+n], nil
		}
		if n > int64(len(buf)) {
			buf = make([]byte, n)
		}
		want := min(int64(len(buf)), fileSize-pos)
		m, err := f.ReadAt(buf[:want], pos)
		if err != nil && err != io.EOF {
			return nil, err
		}
		bufPos, bufLen = pos, int64(m)
		if int64(m) < n {
			return nil, io.ErrUnexpectedEOF
		}
		return buf[:n], nil
	}
	pos, prevLast := int64(0), base-1
	for pos+batch.HeaderSize <= fileSize {
		hb, err := fill(pos, batch.HeaderSize)
		if err == io.ErrUnexpectedEOF {
			return nil
		} else if err != nil {
			return err
		}
		h, ok, _ := parseHdr(hb, fileSize-pos)
		if !ok || h.base <= prevLast || (dense && h.base != prevLast+1) || h.lastOffset-base > math.MaxInt32 || pos > segmentMaxPos {
			return nil
		}
		b, err := fill(pos, h.size)
		if err == io.ErrUnexpectedEOF {
			return nil
		} else if err != nil {
			return err
		}
		if batch.ComputeCRC(b) != binary.BigEndian.Uint32(b[batch.OffCRC:]) {
			return nil
		}
		if rc := int32(binary.BigEndian.Uint32(b[batch.OffRecordCount:])); rc < 0 || int64(rc) > h.lastOffset-h.base+1 {
			return nil
		}
		if err := fn(pos, b, h); err != nil {
			return err
		}
		prevLast = h.lastOffset
		pos += h.size
	}
	return nil
}

func (s *segment) String() string { return fmt.Sprintf("segment(%d)", s.base) }
