package quorum

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-broker/sluice/internal/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// File names inside a quorum data directory.
const (
	identityFile = "identity.json"
	walFile      = "raft.wal"
	snapPrefix   = "snap-"
)

// WAL record types.
const (
	recEntry     byte = 1 // payload: raftpb.Entry
	recHardState byte = 2 // payload: raftpb.HardState
	recSnapRef   byte = 3 // payload: raftpb.SnapshotMetadata of the snapshot file this log continues
)

// maxRecord bounds one WAL record; a larger length field is damage.
const maxRecord = 64 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrIdentity is wrapped by OpenStorage when the directory belongs to another
// cluster or another node.
var ErrIdentity = errors.New("quorum: data directory belongs to another cluster or node")

type identity struct {
	ClusterID uint64 `json:"cluster_id"`
	NodeID    uint64 `json:"node_id"`
}

// Storage is durable raft storage on a vfs.FS. Reads are served by an
// in-memory raft.MemoryStorage that mirrors exactly what has been fsynced.
// Storage is not safe for concurrent writers; Node uses it from its Ready
// loop only (raft itself reads it from the same goroutine).
type Storage struct {
	*raft.MemoryStorage
	fs   vfs.FS
	dir  string
	wal  vfs.File
	size int64 // bytes of valid records in wal
	snap *raftpb.SnapshotMetadata
	id   identity
	// Fresh is true when the directory held no identity file when opened.
	fresh bool
	// empty is true when no HardState, entry or snapshot was recovered.
	empty bool
	// Truncated is the number of torn or corrupt tail bytes cut off the
	// WAL when it was opened.
	Truncated int64
}

// OpenStorage opens (creating if needed) the quorum data directory dir. It
// fails wrapping ErrIdentity if the directory records a different cluster id
// or node id. A torn or corrupt WAL tail is truncated (and the truncation
// fsynced) before the log is replayed.
func OpenStorage(fsys vfs.FS, dir string, clusterID, nodeID uint64) (*Storage, error) {
	if clusterID == 0 || nodeID == 0 {
		return nil, errors.New("quorum: cluster id and node id must be non-zero")
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Storage{MemoryStorage: raft.NewMemoryStorage(), fs: fsys, dir: dir}
	idPath := filepath.Join(dir, identityFile)
	b, err := vfs.ReadFile(fsys, idPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.fresh = true
	case err != nil:
		return nil, err
	default:
		var id identity
		if err := json.Unmarshal(b, &id); err != nil {
			return nil, fmt.Errorf("quorum: %s: %w", idPath, err)
		}
		if id.ClusterID != clusterID || id.NodeID != nodeID {
			return nil, fmt.Errorf("%w: %s records cluster %x node %d, configured cluster %x node %d",
				ErrIdentity, dir, id.ClusterID, id.NodeID, clusterID, nodeID)
		}
	}
	if err := s.replay(); err != nil {
		return nil, err
	}
	s.id = identity{ClusterID: clusterID, NodeID: nodeID}
	s.removeStale()
	return s, nil
}

// Claim records the cluster id and node id in a fresh directory (atomic
// write); later opens with other ids fail. Node calls it once the amnesia
// check has passed, before raft writes anything. A crash between Claim and
// the first Save leaves an identity without a log, which the next start
// refuses as amnesia: conservative, never unsafe.
func (s *Storage) Claim() error {
	if !s.fresh {
		return nil
	}
	b, err := json.Marshal(s.id)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.fs, filepath.Join(s.dir, identityFile), b, 0o644)
}

// Empty reports whether the storage held no raft state when opened.
func (s *Storage) Empty() bool { return s.empty }

// Fresh reports whether the data directory had no identity when opened.
func (s *Storage) Fresh() bool { return s.fresh }

func (s *Storage) snapPath(m *raftpb.SnapshotMetadata) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%016x-%016x", snapPrefix, m.GetTerm(), m.GetIndex()))
}

func (s *Storage) replay() error {
	p := filepath.Join(s.dir, walFile)
	_, serr := s.fs.Stat(p)
	f, err := s.fs.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if errors.Is(serr, os.ErrNotExist) {
		// A new WAL's directory entry must be durable before any record
		// in it is acknowledged; so must the directory itself.
		for _, d := range []string{s.dir, filepath.Dir(s.dir)} {
			if err := s.fs.SyncDir(d); err != nil {
				f.Close()
				return err
			}
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return err
	}
	s.wal = f
	hs := &raftpb.HardState{}
	var off int64
	found := false
	for {
		typ, payload, n := decodeRecord(buf[off:])
		if n == 0 {
			break
		}
		switch typ {
		case recSnapRef:
			m := &raftpb.SnapshotMetadata{}
			if err := proto.Unmarshal(payload, m); err != nil {
				return s.fail(fmt.Errorf("quorum: wal snapshot ref: %w", err))
			}
			data, err := readFramed(s.fs, s.snapPath(m))
			if err != nil {
				return s.fail(fmt.Errorf("quorum: snapshot %d referenced by the wal: %w", m.GetIndex(), err))
			}
			snap := &raftpb.Snapshot{}
			if err := proto.Unmarshal(data, snap); err != nil {
				return s.fail(fmt.Errorf("quorum: snapshot %d: %w", m.GetIndex(), err))
			}
			if err := s.MemoryStorage.ApplySnapshot(snap); err != nil {
				return s.fail(err)
			}
			s.snap = snap.Metadata
			found = true
		case recHardState:
			if err := proto.Unmarshal(payload, hs); err != nil {
				return s.fail(err)
			}
			found = true
		case recEntry:
			e := &raftpb.Entry{}
			if err := proto.Unmarshal(payload, e); err != nil {
				return s.fail(err)
			}
			last, _ := s.MemoryStorage.LastIndex()
			if e.GetIndex() > last+1 {
				return s.fail(fmt.Errorf("quorum: wal entry %d after %d: gap", e.GetIndex(), last))
			}
			if err := s.MemoryStorage.Append([]*raftpb.Entry{e}); err != nil {
				return s.fail(err)
			}
			found = true
		default:
			// A record whose CRC matched but whose type is unknown is
			// written by a newer version: refuse rather than drop it.
			return s.fail(fmt.Errorf("quorum: wal record type %d unknown", typ))
		}
		off += int64(n)
	}
	if !raft.IsEmptyHardState(hs) {
		if err := s.MemoryStorage.SetHardState(hs); err != nil {
			return s.fail(err)
		}
	}
	s.empty = !found
	s.size = off
	if off < int64(len(buf)) {
		s.Truncated = int64(len(buf)) - off
		if err := f.Truncate(off); err != nil {
			return s.fail(err)
		}
		if err := f.Sync(); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

func (s *Storage) fail(err error) error {
	s.wal.Close()
	s.wal = nil
	return err
}

// Record framing: [length u32][crc32c u32 of type+payload][type u8][payload],
// length = 1 + len(payload), little endian.
func encodeRecord(dst []byte, typ byte, payload []byte) []byte {
	var h [9]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(1+len(payload)))
	c := crc32.Update(0, crcTable, []byte{typ})
	c = crc32.Update(c, crcTable, payload)
	binary.LittleEndian.PutUint32(h[4:8], c)
	h[8] = typ
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// decodeRecord returns n == 0 if b does not start with a whole, intact record.
func decodeRecord(b []byte) (typ byte, payload []byte, n int) {
	if len(b) < 9 {
		return 0, nil, 0
	}
	l := binary.LittleEndian.Uint32(b[0:4])
	if l == 0 || l > maxRecord || int64(len(b)-8) < int64(l) {
		return 0, nil, 0
	}
	body := b[8 : 8+l]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[4:8]) {
		return 0, nil, 0
	}
	return body[0], body[1:], 8 + int(l)
}

func readFramed(fsys vfs.FS, p string) ([]byte, error) {
	f, err := fsys.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	_, payload, n := decodeRecord(buf)
	if n == 0 || n != len(buf) {
		return nil, errors.New("corrupt snapshot file")
	}
	return payload, nil
}

// Save makes a Ready's snapshot, entries and HardState durable (fsync)
// and then visible to raft, in that order. A snapshot is written to its own
// file atomically and the WAL is rewritten to continue from it.
func (s *Storage) Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot) error {
	if s.wal == nil {
		return errors.New("quorum: storage closed")
	}
	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := s.writeSnap(snap); err != nil {
			return err
		}
		if err := s.MemoryStorage.ApplySnapshot(snap); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
			return err
		}
		s.snap = snap.Metadata
		if err := s.appendMem(hs, ents); err != nil {
			return err
		}
		return s.rewrite()
	}
	if len(ents) == 0 && (hs == nil || raft.IsEmptyHardState(hs)) {
		return nil
	}
	var buf []byte
	for i := range ents {
		b, err := proto.Marshal(ents[i])
		if err != nil {
			return err
		}
		buf = encodeRecord(buf, recEntry, b)
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		b, err := proto.Marshal(hs)
		if err != nil {
			return err
		}
		buf = encodeRecord(buf, recHardState, b)
	}
	if _, err := s.wal.WriteAt(buf, s.size); err != nil {
		return err
	}
	if err := s.wal.Sync(); err != nil {
		return err
	}
	s.size += int64(len(buf))
	return s.appendMem(hs, ents)
}

func (s *Storage) appendMem(hs *raftpb.HardState, ents []*raftpb.Entry) error {
	if len(ents) > 0 {
		if err := s.MemoryStorage.Append(ents); err != nil {
			return err
		}
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		return s.MemoryStorage.SetHardState(hs)
	}
	return nil
}

func (s *Storage) writeSnap(snap *raftpb.Snapshot) error {
	b, err := proto.Marshal(snap)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.fs, s.snapPath(snap.Metadata), encodeRecord(nil, 0, b), 0o644)
}

// CreateSnapshot records the application state data as of applied index i
// with configuration cs, makes it durable and compacts the log behind it.
func (s *Storage) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error {
	if s.wal == nil {
		return errors.New("quorum: storage closed")
	}
	snap, err := s.MemoryStorage.CreateSnapshot(i, cs, data)
	if err != nil {
		return err
	}
	if err := s.writeSnap(snap); err != nil {
		return err
	}
	s.snap = snap.Metadata
	if err := s.MemoryStorage.Compact(i); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return err
	}
	return s.rewrite()
}

// rewrite replaces the WAL by [snapshot ref][HardState][entries after the
// snapshot] atomically (tmp file, fsync, rename, fsync dir) and then removes
// snapshot files the new WAL no longer references. A crash at any point
// leaves either the old WAL (whose snapshot file still exists) or the new.
func (s *Storage) rewrite() error {
	var buf []byte
	if s.snap.GetIndex() > 0 {
		b, err := proto.Marshal(s.snap)
		if err != nil {
			return err
		}
		buf = encodeRecord(buf, recSnapRef, b)
	}
	hs, _, _ := s.MemoryStorage.InitialState()
	if hs != nil && !raft.IsEmptyHardState(hs) {
		b, err := proto.Marshal(hs)
		if err != nil {
			return err
		}
		buf = encodeRecord(buf, recHardState, b)
	}
	first, _ := s.MemoryStorage.FirstIndex()
	last, _ := s.MemoryStorage.LastIndex()
	if last >= first {
		ents, err := s.MemoryStorage.Entries(first, last+1, ^uint64(0))
		if err != nil {
			return err
		}
		for i := range ents {
			b, err := proto.Marshal(ents[i])
			if err != nil {
				return err
			}
			buf = encodeRecord(buf, recEntry, b)
		}
	}
	p := filepath.Join(s.dir, walFile)
	if err := vfs.WriteFileAtomic(s.fs, p, buf, 0o644); err != nil {
		return err
	}
	s.wal.Close()
	f, err := s.fs.OpenFile(p, os.O_RDWR, 0o644)
	if err != nil {
		s.wal = nil
		return err
	}
	s.wal, s.size = f, int64(len(buf))
	s.removeStale()
	return nil
}

// removeStale removes snapshot files the WAL does not reference (best
// effort: a leftover one is harmless and removed at the next open).
func (s *Storage) removeStale() {
	keep := ""
	if s.snap.GetIndex() > 0 {
		keep = filepath.Base(s.snapPath(s.snap))
	}
	des, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return
	}
	removed := false
	for _, de := range des {
		if n := de.Name(); strings.HasPrefix(n, snapPrefix) && n != keep {
			if s.fs.Remove(filepath.Join(s.dir, n)) == nil {
				removed = true
			}
		}
	}
	if removed {
		_ = s.fs.SyncDir(s.dir)
	}
}

// Close closes the WAL file.
func (s *Storage) Close() error {
	if s.wal == nil {
		return nil
	}
	err := s.wal.Close()
	s.wal = nil
	return err
}
