package quorum

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func ent(term, index uint64, data string) *raftpb.Entry {
	return &raftpb.Entry{Term: proto.Uint64(term), Index: proto.Uint64(index), Type: raftpb.EntryNormal.Enum(), Data: []byte(data)}
}

func hard(term, vote, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
}

// dump renders a storage's recovered state, one line, for comparisons.
func dump(t *testing.T, s *Storage) string {
	t.Helper()
	hs, _, err := s.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	out := fmt.Sprintf("hs=%d/%d/%d", hs.GetTerm(), hs.GetVote(), hs.GetCommit())
	snap, _ := s.Snapshot()
	if i := snap.GetMetadata().GetIndex(); i > 0 {
		out += fmt.Sprintf(" snap=%d/%d:%s", snap.GetMetadata().GetTerm(), i, snap.GetData())
	}
	if last >= first {
		ents, err := s.Entries(first, last+1, ^uint64(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out += fmt.Sprintf(" %d/%d:%s", e.GetTerm(), e.GetIndex(), e.GetData())
		}
	}
	return out
}

func reopen(t *testing.T, fs vfs.FS, s *Storage) *Storage {
	t.Helper()
	if s != nil {
		s.Close()
	}
	s2, err := OpenStorage(fs, "/q", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

// TestStorageSteps is a small script: each step mutates the storage, then
// a power loss and a reopen must reproduce exactly the state shown.
func TestStorageSteps(t *testing.T) {
	fs := vfs.NewMemFS()
	s := reopen(t, fs, nil)
	if !s.Empty() {
		t.Fatal("new storage not empty")
	}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"append", func() error {
			return s.Save(hard(1, 1, 0), []*raftpb.Entry{ent(1, 1, "a"), ent(1, 2, "b"), ent(1, 3, "c")}, nil)
		}, "hs=1/1/0 1/1:a 1/2:b 1/3:c"},
		{"commit only", func() error { return s.Save(hard(1, 1, 2), nil, nil) }, "hs=1/1/2 1/1:a 1/2:b 1/3:c"},
		{"conflict replaces tail", func() error {
			return s.Save(hard(2, 2, 2), []*raftpb.Entry{ent(2, 3, "C"), ent(2, 4, "d")}, nil)
		}, "hs=2/2/2 1/1:a 1/2:b 2/3:C 2/4:d"},
		{"snapshot and compact", func() error {
			return s.CreateSnapshot(3, &raftpb.ConfState{Voters: []uint64{1}}, []byte("S3"))
		}, "hs=2/2/2 snap=2/3:S3 2/4:d"},
		{"append after compaction", func() error {
			return s.Save(hard(2, 2, 4), []*raftpb.Entry{ent(2, 5, "e")}, nil)
		}, "hs=2/2/4 snap=2/3:S3 2/4:d 2/5:e"},
		{"received snapshot replaces log", func() error {
			snap := &raftpb.Snapshot{Data: []byte("S9"), Metadata: &raftpb.SnapshotMetadata{
				Index: proto.Uint64(9), Term: proto.Uint64(3), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
			return s.Save(hard(3, 0, 9), nil, snap)
		}, "hs=3/0/9 snap=3/9:S9"},
		{"append after received snapshot", func() error {
			return s.Save(nil, []*raftpb.Entry{ent(3, 10, "f")}, nil)
		}, "hs=3/0/9 snap=3/9:S9 3/10:f"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := dump(t, s); got != st.want {
			t.Fatalf("%s: live state\n got %s\nwant %s", st.name, got, st.want)
		}
		s.Close()
		fs.Crash(vfs.CrashOptions{})
		s = reopen(t, fs, nil)
		if got := dump(t, s); got != st.want {
			t.Fatalf("%s: after power loss\n got %s\nwant %s", st.name, got, st.want)
		}
	}
	des, _ := fs.ReadDir("/q")
	snaps := 0
	for _, de := range des {
		if len(de.Name()) > 5 && de.Name()[:5] == snapPrefix {
			snaps++
		}
	}
	if snaps != 1 {
		t.Fatalf("%d snapshot files, want 1 (old ones removed)", snaps)
	}
	s.Close()
}

func TestStorageFailedSyncIsReported(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := vfs.NewFaulty(mem)
	s := reopen(t, fs, nil)
	if err := s.Save(hard(1, 1, 1), []*raftpb.Entry{ent(1, 1, "a")}, nil); err != nil {
		t.Fatal(err)
	}
	fs.Add(vfs.Rule{Op: "sync", PathContains: "raft.wal"})
	if err := s.Save(hard(1, 1, 2), []*raftpb.Entry{ent(1, 2, "b")}, nil); err == nil {
		t.Fatal("failed fsync not reported")
	}
	s.Close()
	mem.Crash(vfs.CrashOptions{})
	s = reopen(t, mem, nil)
	if got, want := dump(t, s), "hs=1/1/1 1/1:a"; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
	s.Close()
}

func TestStorageCrashDuringCompaction(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := vfs.NewFaulty(mem)
	s := reopen(t, fs, nil)
	if err := s.Save(hard(1, 1, 2), []*raftpb.Entry{ent(1, 1, "a"), ent(1, 2, "b")}, nil); err != nil {
		t.Fatal(err)
	}
	// The new snapshot file is written, the WAL's rename fails.
	fs.Add(vfs.Rule{Op: "rename", PathContains: "raft.wal"})
	if err := s.CreateSnapshot(2, &raftpb.ConfState{Voters: []uint64{1}}, []byte("S")); err == nil {
		t.Fatal("failed rename not reported")
	}
	s.Close()
	mem.Crash(vfs.CrashOptions{})
	s = reopen(t, mem, nil)
	if got, want := dump(t, s), "hs=1/1/2 1/1:a 1/2:b"; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
	s.Close()
}

func TestStorageIdentity(t *testing.T) {
	fs := vfs.NewMemFS()
	s, err := OpenStorage(fs, "/q", 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, c := range [][2]uint64{{6, 1}, {5, 2}} {
		if _, err := OpenStorage(fs, "/q", c[0], c[1]); !errors.Is(err, ErrIdentity) {
			t.Fatalf("cluster %d node %d: %v, want ErrIdentity", c[0], c[1], err)
		}
	}
	if _, err := OpenStorage(fs, "/q", 0, 1); err == nil {
		t.Fatal("zero cluster id accepted")
	}
}
