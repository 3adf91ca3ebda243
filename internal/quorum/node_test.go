package quorum

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
	"go.etcd.io/raft/v3/raftpb"
)

// countingTransport records messages sent; the node is alone so none are
// needed, but any sent after a failed fsync would be a durability bug.
type countingTransport struct{ n int }

func (c *countingTransport) Send(m []*raftpb.Message) { c.n += len(m) }

func TestFailedFsyncStopsNodeBeforeAck(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := vfs.NewFaulty(mem)
	sm := &listSM{}
	n, err := Start(Config{ID: 1, ClusterID: 3, Peers: []uint64{1}, FS: fs, Dir: "/q",
		Transport: &countingTransport{}, StateMachine: sm})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n.Leader() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		n.Tick()
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.Propose(ctx, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	fs.Add(vfs.Rule{Op: "sync", PathContains: "raft.wal"})
	if err := n.Propose(ctx, []byte("lost")); !errors.Is(err, ErrStopped) {
		t.Fatalf("propose after failed fsync: %v, want ErrStopped", err)
	}
	if err := n.Stop(); err == nil {
		t.Fatal("Stop did not report the persist error")
	}
	if got := sm.list(); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("applied %v, want [ok]", got)
	}
	// After a power loss the node restarts with the one durable entry.
	mem.Crash(vfs.CrashOptions{})
	sm2 := &listSM{}
	n2, err := Start(Config{ID: 1, ClusterID: 3, Peers: []uint64{1}, FS: mem, Dir: "/q",
		Transport: &countingTransport{}, StateMachine: sm2})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Stop()
	for len(sm2.list()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("restart applied %v", sm2.list())
		}
		n2.Tick()
		time.Sleep(time.Millisecond)
	}
}

// A new one-voter quorum elects itself without waiting an election timeout:
// no tick is ever given, yet it leads and commits (what a single node's
// start relies on).
func TestLoneVoterLeadsWithoutTicks(t *testing.T) {
	mem := vfs.NewMemFS()
	for run := range 2 { // a new directory, then a restart
		sm := &listSM{}
		n, err := Start(Config{ID: 1, ClusterID: 3, Peers: []uint64{1}, FS: mem, Dir: "/q",
			Transport: &countingTransport{}, StateMachine: sm, ElectionTick: 10, HeartbeatTick: 1})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for n.Leader() != 1 {
			if time.Now().After(deadline) {
				st, _ := n.Status()
				n.Stop()
				t.Fatalf("run %d: no leader without ticks: %+v applied %d", run, st.BasicStatus, st.Applied)
			}
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = n.Propose(ctx, []byte("x"))
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}
