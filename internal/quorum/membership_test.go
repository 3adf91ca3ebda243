package quorum

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// startObserver starts id as a node outside the configuration.
func (c *cluster) startObserver(id uint64) {
	c.t.Helper()
	if c.m[id] == nil {
		c.m[id] = &member{fs: vfs.NewMemFS()}
	}
	mb := c.m[id]
	mb.sm = &listSM{}
	cfg := c.config(id, false)
	cfg.Peers, cfg.Observer = nil, true
	n, err := Start(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	mb.node = n
	c.nw.Attach(n)
}

func (c *cluster) confChange(id uint64, changes ...*raftpb.ConfChangeSingle) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	cc := &raftpb.ConfChangeV2{Changes: changes}
	go func() { errc <- c.m[id].node.ProposeConfChange(ctx, cc) }()
	for {
		select {
		case err := <-errc:
			return err
		default:
			c.tick()
			time.Sleep(time.Millisecond)
		}
	}
}

func single(t raftpb.ConfChangeType, id uint64) *raftpb.ConfChangeSingle {
	s := &raftpb.ConfChangeSingle{}
	s.Type = &t
	s.NodeId = &id
	return s
}

func (c *cluster) waitMembership(id uint64, voters, learners []uint64) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("node %d to see voters %v learners %v", id, voters, learners), func() bool {
		m, err := c.m[id].node.Membership()
		return err == nil && slices.Equal(m.Voters, voters) && slices.Equal(m.Learners, learners) && !m.Joint
	})
}

// A one-voter quorum grows to three voters (observers first, caught up from
// a snapshot, then promoted together through joint consensus) and shrinks
// back; the configuration survives restarts (it is in the snapshots'
// ConfState and the log).
func TestGrowOneVoterToThreeAndBack(t *testing.T) {
	c := newCluster(t, 1, 5)
	l := c.leader()
	before := seq("a", 0, 12) // past two snapshots: observers start from one
	c.mustPropose(l, before...)

	c.startObserver(2)
	c.startObserver(3)
	// An observer outside the configuration never campaigns.
	for range 50 {
		c.tick()
	}
	if l2 := c.m[2].node.Leader(); l2 == 2 {
		t.Fatal("an observer elected itself")
	}
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeAddLearnerNode, 2)); err != nil {
		t.Fatalf("add learner 2: %v", err)
	}
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeAddLearnerNode, 3)); err != nil {
		t.Fatalf("add learner 3: %v", err)
	}
	c.converge(before)
	c.waitMembership(2, []uint64{1}, []uint64{2, 3})

	// Promote both at once: raft runs joint consensus and leaves it.
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeAddNode, 2), single(raftpb.ConfChangeType_ConfChangeAddNode, 3)); err != nil {
		t.Fatalf("promote: %v", err)
	}
	for id := range uint64(3) {
		c.waitMembership(id+1, []uint64{1, 2, 3}, nil)
	}
	more := seq("b", 0, 8)
	c.mustPropose(l, more...)
	all := append(slices.Clone(before), more...)
	c.converge(all)

	// Three voters survive the loss of the first one: a new leader among
	// 2 and 3 commits.
	c.nw.Detach(1)
	_ = c.m[1].node.Stop()
	c.m[1].node = nil
	l = c.leader(2, 3)
	c.mustPropose(l, "c0")
	all = append(all, "c0")
	if err := c.start(1, true); err != nil {
		t.Fatalf("restart 1: %v", err)
	}
	c.converge(all)
	c.waitMembership(1, []uint64{1, 2, 3}, nil)

	// Shrink back: demote 2 and 3 to observers, then remove them.
	l = c.leader()
	if l != 1 {
		if err := c.m[l].node.TransferLeadership(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		l = c.leader()
	}
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeAddLearnerNode, 2), single(raftpb.ConfChangeType_ConfChangeAddLearnerNode, 3)); err != nil {
		t.Fatalf("demote: %v", err)
	}
	c.waitMembership(l, []uint64{1}, []uint64{2, 3})
	c.mustPropose(l, "d0")
	all = append(all, "d0")
	c.converge(all) // observers keep following
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeRemoveNode, 2), single(raftpb.ConfChangeType_ConfChangeRemoveNode, 3)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	c.waitMembership(l, []uint64{1}, nil)
	for _, id := range []uint64{2, 3} {
		c.nw.Detach(id)
		_ = c.m[id].node.Stop()
		c.m[id].node = nil
	}
	// One voter alone commits again, also after a restart.
	c.mustPropose(l, "e0")
	c.nw.Detach(1)
	_ = c.m[1].node.Stop()
	if err := c.start(1, true); err != nil {
		t.Fatal(err)
	}
	c.waitMembership(1, []uint64{1}, nil)
	c.leader(1)
	c.mustPropose(1, "e1")
}

func (c *cluster) debug() {
	for id, mb := range c.m {
		if mb.node == nil {
			continue
		}
		st, _ := mb.node.Status()
		m, _ := mb.node.Membership()
		c.t.Logf("node %d: lead %d state %v commit %d applied %d members %+v sm %d", id, st.Lead, st.RaftState, st.Commit, st.Applied, m, len(mb.sm.list()))
		for pid, pr := range st.Progress {
			c.t.Logf("   progress %d: %v", pid, pr)
		}
	}
}

// A heartbeat claiming a commit beyond the local log (stale: sent while the
// leader counted on a log this node lost) is dropped, not fatal; the node
// then catches up once the leader reset it (removed and re-added).
func TestStaleHeartbeatBeyondLogIsDropped(t *testing.T) {
	c := newCluster(t, 1, 0)
	l := c.leader()
	c.mustPropose(l, "a", "b", "c")
	c.startObserver(2)
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeAddLearnerNode, 2)); err != nil {
		t.Fatal(err)
	}
	c.converge([]string{"a", "b", "c"})

	// Node 2 loses its disk and restarts empty; a heartbeat from before
	// arrives first.
	c.nw.Detach(2)
	_ = c.m[2].node.Stop()
	c.m[2] = nil
	c.startObserver(2)
	hb := &raftpb.Message{}
	typ, from, to, term, commit := raftpb.MessageType_MsgHeartbeat, uint64(1), uint64(2), c.m[1].node.Term(), uint64(5)
	hb.Type, hb.From, hb.To, hb.Term, hb.Commit = &typ, &from, &to, &term, &commit
	if err := c.m[2].node.Step(context.Background(), hb); err != nil {
		t.Fatal(err)
	}
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeRemoveNode, 2)); err != nil {
		t.Fatal(err)
	}
	if err := c.confChange(l, single(raftpb.ConfChangeType_ConfChangeAddLearnerNode, 2)); err != nil {
		t.Fatal(err)
	}
	c.mustPropose(l, "d")
	c.converge([]string{"a", "b", "c", "d"})
	select {
	case <-c.m[2].node.Done():
		t.Fatalf("node 2 stopped: %v", c.m[2].node.Stop())
	default:
	}
}
