package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// The aborted-transaction index, Kafka's .txnindex: one file per segment,
// created when the first abort marker of a transaction with data lands in
// the segment, holding one 34-byte entry per such marker, in marker order:
//
//	version int16 (0), producer_id int64, first_offset int64,
//	last_offset int64 (the marker's offset), last_stable_offset int64
//
// last_stable_offset is the partition's last stable offset once the
// marker is written. read_committed fetches answer with every aborted
// transaction overlapping the data they return, so clients can drop its
// records. Each segment keeps its entries in memory too (an immutable slice
// replaced on change) so fetches read them without locks or I/O.
//
// Durability: an entry is written and fsynced before the producer state
// learns the transaction ended, so a producer snapshot never covers a
// marker whose entry could be lost; entries missing after a crash (the
// marker reached the disk, the entry did not) are put back by the producer
// state's rebuild, which replays the markers after its snapshot
// (RestoreAbortedTxn).

const (
	txnIndexSuffix   = ".txnindex"
	abortedTxnSize   = 34
	abortedTxnFormat = 0
)

// AbortedTxn is one entry of the aborted-transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64 // the abort marker's offset
	LastStableOffset int64
}

func (t AbortedTxn) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, abortedTxnFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(t.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(t.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(t.LastStableOffset))
}

func encodeTxnIndex(ts []AbortedTxn) []byte {
	b := make([]byte, 0, len(ts)*abortedTxnSize)
	for _, t := range ts {
		b = t.appendTo(b)
	}
	return b
}

// decodeTxnIndex parses a .txnindex. A torn trailing partial entry is
// ignored; an unknown version or entries out of order are an error.
func decodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for len(b) >= abortedTxnSize {
		if v := binary.BigEndian.Uint16(b); v != abortedTxnFormat {
			return out, fmt.Errorf("txnindex entry version %d", v)
		}
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if t.FirstOffset > t.LastOffset || (len(out) > 0 && out[len(out)-1].LastOffset >= t.LastOffset) {
			return out, fmt.Errorf("txnindex entry %+v out of order", t)
		}
		out = append(out, t)
		b = b[abortedTxnSize:]
	}
	return out, nil
}

func txnIndexPath(prefix string) string { return prefix + txnIndexSuffix }

// abortedTxns returns the segment's entries (do not modify).
func (s *segment) abortedTxns() []AbortedTxn {
	if p := s.txns.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *segment) setAbortedTxns(ts []AbortedTxn) {
	if len(ts) == 0 {
		s.txns.Store(nil)
		return
	}
	s.txns.Store(&ts)
}

// loadTxnIndex reads the segment's .txnindex, if any, keeping the entries
// that lie in the segment below next; a file it cannot fully trust is
// rewritten with what it kept.
func (s *segment) loadTxnIndex(fsys vfs.FS, next int64) error {
	data, err := vfs.ReadFile(fsys, txnIndexPath(s.prefix))
	if errors.Is(err, os.ErrNotExist) {
		s.setAbortedTxns(nil)
		return nil
	}
	if err != nil {
		return err
	}
	ts, derr := decodeTxnIndex(data)
	keep := ts[:0:0]
	for _, t := range ts {
		if t.LastOffset >= s.base && t.LastOffset < next {
			keep = append(keep, t)
		}
	}
	s.setAbortedTxns(keep)
	if derr != nil || len(keep) != len(ts) || len(data) != len(ts)*abortedTxnSize {
		return s.writeTxnIndex(fsys, keep)
	}
	return nil
}

// writeTxnIndex replaces the segment's .txnindex with ts (removing it when
// ts is empty), durably.
func (s *segment) writeTxnIndex(fsys vfs.FS, ts []AbortedTxn) error {
	path := txnIndexPath(s.prefix)
	if len(ts) == 0 {
		if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return vfs.WriteFileAtomic(fsys, path, encodeTxnIndex(ts), 0o644)
}

// truncateTxnIndex drops the entries whose marker is at or after next.
func (s *segment) truncateTxnIndex(fsys vfs.FS, next int64) error {
	ts := s.abortedTxns()
	n := len(ts)
	for n > 0 && ts[n-1].LastOffset >= next {
		n--
	}
	if n == len(ts) {
		return nil
	}
	keep := slices.Clone(ts[:n])
	s.setAbortedTxns(keep)
	return s.writeTxnIndex(fsys, keep)
}

// appendAbortedTxn adds t (whose marker is in s, after every entry there)
// to the segment's index: appended to the file and fsynced (the file and,
// when new, its directory entry) before it is published.
func (s *segment) appendAbortedTxn(fsys vfs.FS, dir string, t AbortedTxn) error {
	ts := s.abortedTxns()
	if n := len(ts); n > 0 && ts[n-1].LastOffset >= t.LastOffset {
		return fmt.Errorf("aborted transaction at %d not after %d", t.LastOffset, ts[n-1].LastOffset)
	}
	path := txnIndexPath(s.prefix)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	pos := int64(len(ts)) * abortedTxnSize
	_, err = f.WriteAt(t.appendTo(nil), pos)
	if err == nil {
		err = f.Truncate(pos + abortedTxnSize) // drops a stale tail
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && len(ts) == 0 {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return err
	}
	s.setAbortedTxns(append(slices.Clone(ts), t))
	return nil
}

// AbortedTxns returns the aborted transactions a read_committed fetch from
// fetchOffset returning data below upperBound must report: those whose
// marker is at or after fetchOffset and whose first offset is below
// upperBound (Kafka's collectAbortedTransactions). It takes no lock.
func (l *Log) AbortedTxns(fetchOffset, upperBound int64) []AbortedTxn {
	if l.ensureLoaded() != nil {
		return nil
	}
	segs := l.segments()
	i := max(segmentFor(segs, fetchOffset), 0)
	var out []AbortedTxn
	for ; i < len(segs); i++ {
		for _, t := range segs[i].abortedTxns() {
			if t.LastOffset >= fetchOffset && t.FirstOffset < upperBound {
				out = append(out, t)
			}
			if t.LastStableOffset >= upperBound {
				return out
			}
		}
	}
	return out
}

// AllAbortedTxns returns every entry of the log's aborted-transaction
// index, oldest first (tests, tools, the cleaner).
func (l *Log) AllAbortedTxns() []AbortedTxn {
	if l.ensureLoaded() != nil {
		return nil
	}
	var out []AbortedTxn
	for _, s := range l.segments() {
		out = append(out, s.abortedTxns()...)
	}
	return out
}

// RestoreAbortedTxn makes sure the index holds t, found by replaying the
// log's markers (the producer state's rebuild after a crash): it is added
// to the segment holding its marker unless that segment already has an
// entry for the same marker. An entry whose marker is no longer in the log
// is ignored.
func (l *Log) RestoreAbortedTxn(t AbortedTxn) error {
	if err := l.ensureLoaded(); err != nil {
		return err
	}
	return l.restoreAbortedTxn(t)
}

func (l *Log) restoreAbortedTxn(t AbortedTxn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if t.LastOffset < l.logStart.Load() || t.LastOffset >= l.leo.Load() {
		return nil
	}
	segs := l.segments()
	i := segmentFor(segs, t.LastOffset)
	if i < 0 {
		return nil
	}
	s := segs[i]
	ts := s.abortedTxns()
	j, found := slices.BinarySearchFunc(ts, t.LastOffset, func(e AbortedTxn, off int64) int {
		switch {
		case e.LastOffset < off:
			return -1
		case e.LastOffset > off:
			return 1
		}
		return 0
	})
	if found {
		return nil
	}
	if j == len(ts) {
		if err := s.appendAbortedTxn(l.fs, l.dir, t); err != nil {
			return storageErr("txnindex", err)
		}
		return nil
	}
	keep := slices.Insert(slices.Clone(ts), j, t)
	if err := s.writeTxnIndex(l.fs, keep); err != nil {
		return storageErr("txnindex", err)
	}
	s.setAbortedTxns(keep)
	return nil
}

// LastStableOffset is the offset below which every transaction is
// decided for readers: the first offset of the earliest ongoing
// transaction, or of the earliest one whose marker is not yet below the
// high watermark when the TxnGuard is an UndecidedTxnGuard (Kafka's
// unreplicated transactions: a marker only the leader holds may be
// truncated by the next leader), but not below the log start offset, as
// Kafka; the high watermark when there is none (or no TxnGuard is
// installed). read_committed fetches return data only below it. It never
// exceeds the high watermark. It takes no lock of the log.
//
// Ordering: Append tells the producer state about a transaction's first
// batch before it publishes the new end, and about a marker after. The
// high watermark is loaded before the first undecided offset (so a batch
// counted in it is seen as unstable) and loaded again after; when it moved
// in between, the read is repeated.
func (l *Log) LastStableOffset() int64 {
	_ = l.ensureLoaded() // its producer state is rebuilt by the load
	return l.lastStableOffset()
}

func (l *Log) lastStableOffset() int64 {
	g := l.txnGuard.Load()
	if g == nil {
		return l.HighWatermark()
	}
	ug, _ := (*g).(UndecidedTxnGuard)
	for i := 0; ; i++ {
		hw := l.HighWatermark()
		var fu int64
		if ug != nil {
			fu = ug.FirstUndecidedOffset(hw)
		} else {
			fu = (*g).FirstUnstableOffset()
		}
		if l.HighWatermark() != hw && i < 100 {
			continue
		}
		if fu >= 0 && fu < hw {
			return min(max(fu, l.logStart.Load()), hw)
		}
		return hw
	}
}
