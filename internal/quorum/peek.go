package quorum

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// PeekSnapshot returns the state machine data of the snapshot the metadata
// log in dir starts from (nil when it has none), reading the files without
// changing them. A start can decode it while it does other work and hand
// the result to the StateMachine's Restore, which Start calls with the same
// bytes (metadata.Store.Prefetch).
func PeekSnapshot(fsys vfs.FS, dir string) ([]byte, error) {
	buf, err := vfs.ReadFile(fsys, filepath.Join(dir, walFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var last *raftpb.SnapshotMetadata
	for off := 0; ; {
		typ, payload, n := decodeRecord(buf[off:])
		if n == 0 {
			break
		}
		if typ == recSnapRef {
			m := &raftpb.SnapshotMetadata{}
			if err := proto.Unmarshal(payload, m); err != nil {
				return nil, fmt.Errorf("quorum: wal snapshot ref: %w", err)
			}
			last = m
		}
		off += n
	}
	if last == nil {
		return nil, nil
	}
	s := &Storage{fs: fsys, dir: dir}
	data, err := readFramed(fsys, s.snapPath(last))
	if err != nil {
		return nil, err
	}
	snap := &raftpb.Snapshot{}
	if err := proto.Unmarshal(data, snap); err != nil {
		return nil, fmt.Errorf("quorum: snapshot %d: %w", last.GetIndex(), err)
	}
	return snap.GetData(), nil
}
