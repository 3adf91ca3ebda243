package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// File name suffixes, as Apache Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted" // segment files awaiting delayed deletion
	cleanedSuffix   = ".cleaned" // cleaner output not yet swapped in
	swapSuffix      = ".swap"    // cleaner output past the point of no return
)

// segmentName is the 20-digit zero-padded base offset Kafka uses.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// segment is one .log file with its two indexes. Fields marked (mu) are
// touched only under the owning Log's append lock; atomics are read by
// readers without locks.
type segment struct {
	base   int64
	prefix string // dir/<20-digit base>, no suffix
	log    vfs.File
	idx    *indexFile // .index
	tidx   *indexFile // .timeindex

	size        atomic.Int64 // bytes of whole batches readable
	next        atomic.Int64 // one past the last offset stored
	maxTs       atomic.Int64 // largest batch maxTimestamp, -1 if none
	maxTsOffset atomic.Int64 // last offset of the batch holding maxTs
	rollTs      atomic.Int64 // maxTimestamp of the first batch (segment.ms), -1 if none
	createdMs   atomic.Int64 // when created or opened (ms)
	dirty       atomic.Bool  // written since the last sync of .log
	idxDirty    atomic.Bool  // index entries added since the last index sync
	hint        atomic.Uint64
	txns        atomic.Pointer[[]AbortedTxn] // aborted-transaction index (txnindex.go)

	bytesSinceIndex int64 // (mu)

	// reserved: the .log's blocks are allocated up to here (reserve.go). (mu)
	reserved int64
}

func newSegmentStruct(base int64, prefix string, nowMs int64) *segment {
	s := &segment{base: base, prefix: prefix}
	s.createdMs.Store(nowMs)
	s.next.Store(base)
	s.maxTs.Store(-1)
	s.maxTsOffset.Store(base - 1)
	s.rollTs.Store(-1)
	return s
}

// openFiles opens a segment's three files through the manager's descriptor
// cache (directly if files is nil).
func openFiles(fsys vfs.FS, files *vfs.FileCache, prefix string, flag int, suffix string) (log, idx, tidx vfs.File, err error) {
	closeAll := func() {
		for _, f := range []vfs.File{log, idx, tidx} {
			if f != nil {
				_ = f.Close()
			}
		}
	}
	if log, err = openFile(fsys, files, prefix+logSuffix+suffix, flag); err != nil {
		return nil, nil, nil, err
	}
	if idx, err = openFile(fsys, files, prefix+indexSuffix+suffix, flag|os.O_CREATE); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	if tidx, err = openFile(fsys, files, prefix+timeIndexSuffix+suffix, flag|os.O_CREATE); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return log, idx, tidx, nil
}

func openFile(fsys vfs.FS, files *vfs.FileCache, name string, flag int) (vfs.File, error) {
	if files == nil {
		return fsys.OpenFile(name, flag, 0o644)
	}
	if flag&(os.O_CREATE|os.O_TRUNC) == 0 || flag&os.O_TRUNC == 0 && fileExists(fsys, name) {
		// An existing file (a restart): opened on first use, so loading
		// an idle partition opens nothing.
		return files.OpenLazy(fsys, name, flag, 0o644), nil
	}
	f, err := files.Open(fsys, name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func fileExists(fsys vfs.FS, name string) bool {
	_, err := fsys.Stat(name)
	return err == nil
}

// renameFile renames a segment file; a cached file learns its new name (a
// reopen after an eviction uses it).
func renameFile(fsys vfs.FS, f vfs.File, from, to string) error {
	if cf, ok := f.(*vfs.CachedFile); ok && cf.Name() == from {
		return cf.Rename(to)
	}
	return fsys.Rename(from, to)
}

// createSegment makes a new empty segment and makes its files and their
// directory entries durable.
func createSegment(fsys vfs.FS, files *vfs.FileCache, dir string, base int64, nowMs int64) (*segment, error) {
	prefix := filepath.Join(dir, segmentName(base))
	log, idx, tidx, err := openFiles(fsys, files, prefix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, "")
	if err != nil {
		return nil, err
	}
	s := newSegmentStruct(base, prefix, nowMs)
	s.log = log
	s.idx = newIndexFile(idx, offsetIndexEntrySize, 0, nil)
	s.tidx = newIndexFile(tidx, timeIndexEntrySize, 0, nil)
	if rerr := fsys.Remove(txnIndexPath(prefix)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	for _, f := range []vfs.File{log, idx, tidx} {
		if err != nil {
			break
		}
		if err = f.Sync(); err != nil {
			break
		}
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		s.close()
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			_ = fsys.Remove(prefix + suf)
		}
		return nil, err
	}
	return s, nil
}

// files returns the segment's .log, .index and .timeindex files, in
// segmentPaths order.
func (s *segment) files() []vfs.File {
	return []vfs.File{s.log, s.idxFile(), s.tidxFile()}
}

func (s *segment) close() {
	for _, f := range s.files() {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (s *segment) idxFile() vfs.File {
	if s.idx == nil {
		return nil
	}
	return s.idx.f
}

func (s *segment) tidxFile() vfs.File {
	if s.tidx == nil {
		return nil
	}
	return s.tidx.f
}

// relOffset converts an absolute offset of this segment to the index's
// 32-bit relative offset.
func (s *segment) relOffset(off int64) uint32 { return uint32(off - s.base) }

// fits reports whether offsets up to last can be indexed in this segment.
func (s *segment) fits(last int64) bool { return last-s.base <= math.MaxInt32 && last >= s.base }

// onBatch updates the in-memory state and the indexes for one batch just
// written at pos (append, recovery and index rebuild all go through here,
// so the indexes come out exactly as Kafka builds them).
func (s *segment) onBatch(pos int64, size int64, lastOffset, maxTs int64, indexInterval int64) error {
	if maxTs > s.maxTs.Load() {
		s.maxTs.Store(maxTs)
		s.maxTsOffset.Store(lastOffset)
	}
	if s.rollTs.Load() < 0 && s.next.Load() == s.base && maxTs >= 0 {
		s.rollTs.Store(maxTs)
	}
	var err error
	if s.bytesSinceIndex > indexInterval {
		var e [timeIndexEntrySize]byte
		putOffsetEntry(e[:], s.relOffset(lastOffset), uint32(pos))
		err = s.idx.appendEntry(e[:offsetIndexEntrySize])
		if err2 := s.maybeAppendTimeEntry(); err == nil {
			err = err2
		}
		s.bytesSinceIndex = 0
		s.idxDirty.Store(true)
	}
	s.bytesSinceIndex += size
	return err
}

// maybeAppendTimeEntry appends (maxTs, maxTsOffset) to the time index if it
// is newer than the last entry (also the final entry on roll and close,
// which Kafka writes even into a full index: indexFull leaves room for it).
func (s *segment) maybeAppendTimeEntry() error {
	ts := s.maxTs.Load()
	if ts < 0 {
		return nil
	}
	if last := s.tidx.lastEntry(); last != nil && timeEntryKey(last) >= ts {
		return nil
	}
	var e [timeIndexEntrySize]byte
	putTimeEntry(e[:], ts, s.relOffset(s.maxTsOffset.Load()))
	s.idxDirty.Store(true)
	return s.tidx.appendEntry(e[:])
}

// indexFull reports whether either index reached segment.index.bytes.
func (s *segment) indexFull(indexBytes int) bool {
	return s.idx.entries() >= indexBytes/offsetIndexEntrySize ||
		s.tidx.entries() >= indexBytes/timeIndexEntrySize-1 // room for the final entry
}

// hdr is the part of a batch header the log needs.
type hdr struct {
	base       int64
	size       int64 // whole batch
	lastOffset int64
	maxTs      int64
}

// readHdr reads the header of the batch at pos. It checks only what it
// needs to walk batches (magic and length); ok=false means no sane batch
// starts at pos (or the file ends within the header).
func readHdr(f vfs.File, pos, limit int64, buf *[batch.HeaderSize]byte) (hdr, bool, error) {
	if limit-pos < batch.HeaderSize {
		return hdr{}, false, nil
	}
	if _, err := f.ReadAt(buf[:], pos); err != nil {
		return hdr{}, false, err
	}
	return parseHdr(buf[:], limit-pos)
}

func parseHdr(b []byte, avail int64) (hdr, bool, error) {
	length := int64(int32(binary.BigEndian.Uint32(b[batch.OffLength:])))
	if b[batch.OffMagic] != batch.Magic || length < batch.MinLength || 12+length > avail {
		return hdr{}, false, nil
	}
	h := hdr{
		base: int64(binary.BigEndian.Uint64(b[batch.OffBaseOffset:])),
		size: 12 + length,
	}
	delta := int64(int32(binary.BigEndian.Uint32(b[batch.OffLastOffsetDelta:])))
	if delta < 0 {
		return hdr{}, false, nil
	}
	h.lastOffset = h.base + delta
	h.maxTs = int64(binary.BigEndian.Uint64(b[batch.OffMaxTimestamp:]))
	return h, true, nil
}

// hint packing: the position and relative offset of a batch start a reader
// is likely to ask for next (consumers read sequentially).
func packHint(rel uint32, pos uint32) uint64 { return uint64(rel)<<32 | uint64(pos) }

// locate returns the position of the first batch whose last offset is >=
// offset, reading at most up to limit (the readable size). found=false if
// no such batch is below limit.
func (s *segment) locate(offset, limit int64) (int64, hdr, bool, error) {
	var buf [batch.HeaderSize]byte
	pos := int64(0)
	if h := s.hint.Load(); h != 0 && int64(h>>32)+s.base == offset && int64(uint32(h)) <= limit {
		pos = int64(uint32(h))
	} else if offset > s.base {
		var e [offsetIndexEntrySize]byte
		ok, err := s.idx.floor(offset-s.base, offsetEntryKey, e[:])
		if err != nil {
			return 0, hdr{}, false, err
		}
		if ok {
			if p := int64(binary.BigEndian.Uint32(e[4:8])); p <= limit {
				pos = p
			}
		}
	}
	for pos < limit {
		h, ok, err := readHdr(s.log, pos, limit, &buf)
		if err != nil {
			return 0, hdr{}, false, err
		}
		if !ok {
			return 0, hdr{}, false, nil
		}
		if h.lastOffset >= offset {
			return pos, h, true, nil
		}
		pos += h.size
	}
	return 0, hdr{}, false, nil
}

// segmentMaxPos is the largest position an index entry can hold.
const segmentMaxPos = math.MaxInt32
