package producer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// Snapshot files use Kafka's producer-snapshot layout, version 1, so Kafka's
// tools can read them:
//
//	version          int16   (1)
//	crc              uint32  CRC-32C of everything after this field
//	producer_entries int32 count, then per entry:
//	  producer_id int64, epoch int16, last_sequence int32, last_offset int64,
//	  offset_delta int32, timestamp int64, coordinator_epoch int32,
//	  current_txn_first_offset int64 (-1 when no transaction is ongoing)
//
// A producer known only from transaction markers or coordinator batches
// (no batch in its window) is written with last_sequence -1, last_offset
// -1 and offset_delta 0, as Kafka writes an empty entry.
//
// As in Kafka, only a producer's last batch is kept; the batches written
// after the snapshot offset are replayed from the log on open, so a producer
// that wrote after the snapshot has up to five batches again.
const (
	snapshotVersion   = 1
	snapshotSuffix    = ".snapshot"
	snapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	snapshotHeader    = 2 + 4 + 4
	// snapshotsKept is how many snapshot files WriteSnapshot leaves behind.
	snapshotsKept = 2
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// SnapshotName is the file name of the snapshot taken at offset.
func SnapshotName(offset int64) string { return fmt.Sprintf("%020d%s", offset, snapshotSuffix) }

// encodeSnapshot serializes the state and returns it with the state's end
// offset.
func (s *State) encodeSnapshot() ([]byte, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.producers))
	for id, e := range s.producers {
		if !e.empty() || e.txnFirst >= 0 || e.epoch != noEpoch {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	b := make([]byte, snapshotHeader, snapshotHeader+len(ids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b[0:], snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := s.producers[id]
		m := &batchMeta{firstSeq: -1, lastSeq: -1, firstOffset: -1, lastOffset: -1, timestamp: e.lastTimestamp}
		if !e.empty() {
			m = e.last()
		}
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(m.lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(m.lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(m.lastOffset-m.firstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(m.timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirst))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32c))
	return b, s.end
}

// errCorruptSnapshot marks a snapshot that fails its checks.
var errCorruptSnapshot = errors.New("corrupt producer snapshot")

// decodeSnapshot parses a snapshot into a fresh producer map.
func decodeSnapshot(b []byte) (map[int64]*entry, error) {
	if len(b) < snapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptSnapshot, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errCorruptSnapshot, v)
	}
	if want, got := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], crc32c); want != got {
		return nil, fmt.Errorf("%w: crc %08x, computed %08x", errCorruptSnapshot, want, got)
	}
	n := int32(binary.BigEndian.Uint32(b[6:]))
	if n < 0 || int64(n)*snapshotEntrySize != int64(len(b)-snapshotHeader) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorruptSnapshot, n, len(b))
	}
	out := make(map[int64]*entry, n)
	p := b[snapshotHeader:]
	for i := int32(0); i < n; i++ {
		id := int64(binary.BigEndian.Uint64(p))
		epoch := int16(binary.BigEndian.Uint16(p[8:]))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int32(binary.BigEndian.Uint32(p[22:]))
		ts := int64(binary.BigEndian.Uint64(p[26:]))
		coord := int32(binary.BigEndian.Uint32(p[34:]))
		txnFirst := int64(binary.BigEndian.Uint64(p[38:]))
		p = p[snapshotEntrySize:]
		emptyEntry := lastSeq < 0 && lastOffset == -1 && delta == 0
		if id < 0 || delta < 0 || (!emptyEntry && lastOffset < int64(delta)) || txnFirst < -1 {
			return nil, fmt.Errorf("%w: bad entry for producer %d", errCorruptSnapshot, id)
		}
		e := newEntry()
		e.coordinatorEpoch = coord
		e.epoch = epoch
		e.lastTimestamp = ts
		e.txnFirst = txnFirst
		if lastSeq >= 0 && !emptyEntry {
			e.add(epoch, batchMeta{
				firstSeq:    decrementSequence(lastSeq, delta),
				lastSeq:     lastSeq,
				firstOffset: lastOffset - int64(delta),
				lastOffset:  lastOffset,
				timestamp:   ts,
			})
		}
		out[id] = e
	}
	return out, nil
}

// WriteSnapshot writes the state as it is now to dir/SnapshotName(offset)
// durably (temporary file, fsync, rename, fsync of the directory) and removes
// all but the newest few snapshots. offset is the log end offset the state
// corresponds to: everything before it has been applied. As in Kafka, a
// snapshot already at offset is kept when no batch was applied since the
// last snapshot written or loaded (a restart of an idle partition writes
// nothing).
func (s *State) WriteSnapshot(fsys vfs.FS, dir string, offset int64) error {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	s.mu.Lock()
	unchanged := s.end <= s.snapEnd
	s.mu.Unlock()
	if unchanged {
		if _, err := fsys.Stat(filepath.Join(dir, SnapshotName(offset))); err == nil {
			return nil
		}
	}
	data, end := s.encodeSnapshot()
	if end > offset {
		return fmt.Errorf("producer snapshot at %d: state already holds batches up to %d", offset, end)
	}
	if err := s.writeSnapshot(fsys, dir, offset, data); err != nil {
		return err
	}
	s.mu.Lock()
	s.snapEnd = max(s.snapEnd, end)
	s.mu.Unlock()
	return nil
}

// SnapshotIfChanged writes a snapshot named for the state's own end offset
// (one past the last producer batch applied) when batches were applied
// since the last snapshot; it may run while the log takes appends. It
// reports whether a snapshot was written. Periodic snapshots bound how much
// of the log a rebuild after a crash has to scan.
func (s *State) SnapshotIfChanged(fsys vfs.FS, dir string) (bool, error) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	s.mu.Lock()
	changed := s.end > s.snapEnd
	s.mu.Unlock()
	if !changed {
		return false, nil
	}
	data, end := s.encodeSnapshot()
	if err := s.writeSnapshot(fsys, dir, end, data); err != nil {
		return false, err
	}
	s.mu.Lock()
	s.snapEnd = max(s.snapEnd, end)
	s.mu.Unlock()
	return true, nil
}

func (s *State) writeSnapshot(fsys vfs.FS, dir string, offset int64, data []byte) error {
	final := filepath.Join(dir, SnapshotName(offset))
	if err := vfs.WriteFileAtomic(fsys, final, data, 0o644); err != nil {
		return fmt.Errorf("producer snapshot %s: %w", final, err)
	}
	offsets, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	for i := 0; i < len(offsets)-snapshotsKept; i++ {
		if err := fsys.Remove(filepath.Join(dir, SnapshotName(offsets[i]))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// LoadSnapshot loads the newest valid snapshot of dir whose offset is at most
// logEndOffset into s (replacing its contents) and returns the offset from
// which the log must be replayed (with Replay) to bring the state up to date.
// Snapshots beyond logEndOffset (the log was truncated) and corrupt ones are
// deleted. Without a usable snapshot it returns logStartOffset and leaves s
// empty. Producers whose last timestamp is expirationMs or more before nowMs
// are not loaded (expirationMs <= 0 keeps all).
func (s *State) LoadSnapshot(fsys vfs.FS, dir string, logStartOffset, logEndOffset, nowMs, expirationMs int64) (int64, error) {
	offsets, err := listSnapshots(fsys, dir)
	if err != nil {
		return 0, err
	}
	s.Clear()
	for i := len(offsets) - 1; i >= 0; i-- {
		off := offsets[i]
		path := filepath.Join(dir, SnapshotName(off))
		if off > logEndOffset || off < logStartOffset {
			if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return 0, err
			}
			continue
		}
		data, err := vfs.ReadFile(fsys, path)
		if err != nil {
			return 0, err
		}
		producers, err := decodeSnapshot(data)
		if err != nil {
			if rmErr := fsys.Remove(path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				return 0, rmErr
			}
			continue
		}
		s.mu.Lock()
		for id, e := range producers {
			if e.txnFirst < 0 && expirationMs > 0 && nowMs-e.lastTimestamp >= expirationMs {
				continue
			}
			// An ongoing transaction stays open even when the log start
			// moved past its data (see TruncateHead).
			s.producers[id] = e
			if e.txnFirst >= 0 {
				s.ongoing[id] = e.txnFirst
			}
		}
		s.recomputeLocked()
		s.end, s.snapEnd = off, off
		s.mu.Unlock()
		return off, nil
	}
	return logStartOffset, nil
}

// listSnapshots returns the offsets of dir's snapshot files, ascending.
func listSnapshots(fsys vfs.FS, dir string) ([]int64, error) {
	des, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []int64
	for _, de := range des {
		name := de.Name()
		base, ok := strings.CutSuffix(name, snapshotSuffix)
		if !ok || len(base) != 20 {
			continue
		}
		off, err := strconv.ParseInt(base, 10, 64)
		if err != nil || off < 0 {
			continue
		}
		out = append(out, off)
	}
	slices.Sort(out)
	return out, nil
}
