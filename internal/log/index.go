package log

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// Index files, exactly as Apache Kafka writes them (big-endian, no header):
//
//	.index      8-byte entries: relative offset (uint32, offset - segment base), position (uint32)
//	.timeindex 12-byte entries: timestamp (int64 ms), relative offset (uint32)
//
// Both are sparse and strictly increasing in their key. Kafka preallocates
// them to segment.index.bytes and trims them on roll; we write the exact
// size. Recovery treats a trailing run of zero entries (a preallocated file)
// as the end.
const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
	// pendingEntries is how many entries an index buffers in memory before
	// writing them out with one write (and always on flush, roll, close).
	pendingEntries = 64
)

// indexFile is an append-only sparse index of one segment. Appends come from
// the log's append path (one writer); lookups from any reader.
type indexFile struct {
	f         vfs.File
	entrySize int

	mu          sync.RWMutex
	fileEntries int    // entries already in the file
	pending     []byte // entries not yet written, whole entries
	last        []byte // copy of the last entry (nil if none)
	lastBuf     [timeIndexEntrySize]byte
}

func newIndexFile(f vfs.File, entrySize int, entries int, last []byte) *indexFile {
	ix := &indexFile{f: f, entrySize: entrySize, fileEntries: entries}
	if last != nil {
		ix.last = ix.lastBuf[:entrySize]
		copy(ix.last, last)
	}
	return ix
}

// entries returns the number of entries, written or pending.
func (ix *indexFile) entries() int {
	ix.mu.RLock()
	n := ix.fileEntries + len(ix.pending)/ix.entrySize
	ix.mu.RUnlock()
	return n
}

// lastEntry returns a copy of the last entry, or nil.
func (ix *indexFile) lastEntry() []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.last == nil {
		return nil
	}
	return append([]byte(nil), ix.last...)
}

// appendEntry buffers one entry; it writes the buffer out once it holds
// pendingEntries entries. A failed write drops the buffered entries (a
// sparse index with gaps is still correct) and returns the error.
func (ix *indexFile) appendEntry(e []byte) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.pending == nil {
		ix.pending = make([]byte, 0, pendingEntries*ix.entrySize)
	}
	ix.pending = append(ix.pending, e...)
	ix.last = ix.lastBuf[:ix.entrySize]
	copy(ix.last, e)
	if len(ix.pending) >= pendingEntries*ix.entrySize {
		return ix.writePendingLocked()
	}
	return nil
}

// writePending writes the buffered entries to the file.
func (ix *indexFile) writePending() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.writePendingLocked()
}

func (ix *indexFile) writePendingLocked() error {
	if len(ix.pending) == 0 {
		return nil
	}
	_, err := ix.f.WriteAt(ix.pending, int64(ix.fileEntries*ix.entrySize))
	if err != nil {
		// Drop what we could not write and cut any partial entry; the index
		// stays a valid (sparser) index of the segment.
		_ = ix.f.Truncate(int64(ix.fileEntries * ix.entrySize))
		ix.pending = ix.pending[:0]
		ix.refreshLastLocked()
		return err
	}
	ix.fileEntries += len(ix.pending) / ix.entrySize
	ix.pending = ix.pending[:0]
	return nil
}

// refreshLastLocked reloads ix.last from the file after entries were dropped.
func (ix *indexFile) refreshLastLocked() {
	if ix.fileEntries == 0 {
		ix.last = nil
		return
	}
	ix.last = ix.lastBuf[:ix.entrySize]
	if _, err := ix.f.ReadAt(ix.last, int64((ix.fileEntries-1)*ix.entrySize)); err != nil {
		ix.last = nil
	}
}

// sync writes pending entries and fsyncs the file.
func (ix *indexFile) sync() error {
	if err := ix.writePending(); err != nil {
		return err
	}
	return ix.f.Sync()
}

// releasePending drops the pending buffer's memory (idle partitions).
func (ix *indexFile) releasePending() {
	ix.mu.Lock()
	if len(ix.pending) == 0 {
		ix.pending = nil
	}
	ix.mu.Unlock()
}

// truncateEntries keeps the first n entries.
func (ix *indexFile) truncateEntries(n int) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.writePendingLocked(); err != nil {
		return err
	}
	if n >= ix.fileEntries {
		return nil
	}
	if err := ix.f.Truncate(int64(n * ix.entrySize)); err != nil {
		return err
	}
	ix.fileEntries = n
	ix.refreshLastLocked()
	return nil
}

// searchBufPool holds chunk buffers for the last steps of a lookup.
var searchBufPool = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// floor finds the last entry whose key is <= target (key extracts the
// entry's sort key) and copies it into out; false if every entry is larger
// (or there are none).
func (ix *indexFile) floor(target int64, key func([]byte) int64, out []byte) (bool, error) {
	i, err := ix.floorIndex(target, key, out)
	return i >= 0, err
}

// floorIndex is floor returning the entry's index (-1 if none).
func (ix *indexFile) floorIndex(target int64, key func([]byte) int64, out []byte) (int, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	es := ix.entrySize
	// The pending entries are the newest: check them first.
	if np := len(ix.pending) / es; np > 0 && key(ix.pending[:es]) <= target {
		i := 0
		for j := 1; j < np && key(ix.pending[j*es:(j+1)*es]) <= target; j++ {
			i = j
		}
		copy(out, ix.pending[i*es:(i+1)*es])
		return ix.fileEntries + i, nil
	}
	lo, hi := 0, ix.fileEntries // the answer is the last index with key <= target, in [lo-1, hi)
	bp := searchBufPool.Get().(*[]byte)
	defer searchBufPool.Put(bp)
	buf := *bp
	chunk := len(buf) / es
	for hi-lo > chunk {
		mid := int(uint(lo+hi) >> 1)
		if _, err := ix.f.ReadAt(buf[:es], int64(mid*es)); err != nil {
			return -1, err
		}
		if key(buf[:es]) <= target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	// Entries [lo, hi) fit in one read; before lo every key is <= target.
	if hi > lo {
		n := hi - lo
		if _, err := ix.f.ReadAt(buf[:n*es], int64(lo*es)); err != nil && err != io.EOF {
			return -1, err
		}
		found := -1
		for j := 0; j < n && key(buf[j*es:(j+1)*es]) <= target; j++ {
			found = j
		}
		if found >= 0 {
			copy(out, buf[found*es:(found+1)*es])
			return lo + found, nil
		}
	}
	if lo == 0 {
		return -1, nil
	}
	if _, err := ix.f.ReadAt(out[:es], int64((lo-1)*es)); err != nil {
		return -1, err
	}
	return lo - 1, nil
}

func offsetEntryKey(e []byte) int64 { return int64(binary.BigEndian.Uint32(e[0:4])) }
func timeEntryKey(e []byte) int64   { return int64(binary.BigEndian.Uint64(e[0:8])) }

// loadIndexEntries reads an index file and returns how many leading entries
// are sane (strictly increasing keys, trailing zero entries of a
// preallocated file ignored) and the last sane entry. check validates one
// entry beyond ordering; a false result ends the sane prefix.
func loadIndexEntries(f vfs.File, entrySize int, key func([]byte) int64, check func([]byte) bool) (n int, last []byte, complete bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, false, err
	}
	size := fi.Size()
	if size%int64(entrySize) != 0 {
		complete = false
	} else {
		complete = true
	}
	total := int(size / int64(entrySize))
	if total == 0 {
		return 0, nil, complete, nil
	}
	// The buffer is sized for the file: loading many small indexes (a
	// restart with many partitions) must not allocate 64 KiB each.
	buf := make([]byte, min(64*1024/entrySize, total)*entrySize)
	prev := int64(-1 << 63)
	for read := 0; read < total; {
		want := min(len(buf)/entrySize, total-read)
		if _, err := f.ReadAt(buf[:want*entrySize], int64(read*entrySize)); err != nil && err != io.EOF {
			return 0, nil, false, err
		}
		for j := 0; j < want; j++ {
			e := buf[j*entrySize : (j+1)*entrySize]
			if isZero(e) && read+j > 0 {
				// Preallocated tail: fine only if everything after is zero too.
				if !allZero(f, int64((read+j)*entrySize), size) {
					complete = false
				}
				return n, last, complete, nil
			}
			k := key(e)
			if (read+j > 0 && k <= prev) || !check(e) {
				return n, last, false, nil
			}
			prev = k
			n++
			last = append(last[:0], e...)
		}
		read += want
	}
	return n, last, complete, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func allZero(f vfs.File, from, to int64) bool {
	buf := make([]byte, 4096)
	for from < to {
		n := min(int64(len(buf)), to-from)
		if _, err := f.ReadAt(buf[:n], from); err != nil && err != io.EOF {
			return false
		}
		if !isZero(buf[:n]) {
			return false
		}
		from += n
	}
	return true
}

func putOffsetEntry(b []byte, rel uint32, pos uint32) {
	binary.BigEndian.PutUint32(b[0:4], rel)
	binary.BigEndian.PutUint32(b[4:8], pos)
}

func putTimeEntry(b []byte, ts int64, rel uint32) {
	binary.BigEndian.PutUint64(b[0:8], uint64(ts))
	binary.BigEndian.PutUint32(b[8:12], rel)
}

func (ix *indexFile) String() string {
	return fmt.Sprintf("index(%s, %d entries)", ix.f.Name(), ix.entries())
}
