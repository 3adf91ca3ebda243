package quorum

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Membership changes (KIP-853's AddRaftVoter and RemoveRaftVoter, and
// observers that follow the log) are etcd raft's configuration changes:
// a ConfChangeV2 is proposed like any entry, and raft applies it when it
// commits (with joint consensus when it changes several voters at once).
// Raft allows one pending change at a time; a second one proposed meanwhile
// is dropped by raft (replaced by an empty entry), so ProposeConfChange then
// fails with its context's error. The configuration is saved in every
// snapshot's ConfState and rebuilt from the log's entries otherwise.

type confProposal struct {
	cc   *raftpb.ConfChangeV2
	id   uint64
	done chan error
}

// ErrConfChangePending is returned when raft refuses a configuration change
// because another one is not applied yet.
var ErrConfChangePending = errors.New("quorum: another configuration change is in progress")

// ProposeConfChange proposes a configuration change and returns once it is
// committed and applied by this node (or fails as Propose does).
func (n *Node) ProposeConfChange(ctx context.Context, cc *raftpb.ConfChangeV2) error {
	if l := n.leader.Load(); l != n.cfg.ID {
		return &NotLeaderError{Leader: l}
	}
	id := n.nextID.Add(1)
	c := &raftpb.ConfChangeV2{}
	c.Transition = cc.Transition
	c.Changes = cc.Changes
	c.Context = binary.BigEndian.AppendUint64(nil, id)
	p := confProposal{cc: c, id: id, done: make(chan error, 1)}
	select {
	case n.confc <- p:
	case <-n.donec:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.done:
		return err
	case <-n.donec:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// proposeConfChange runs in the Ready loop.
func (n *Node) proposeConfChange(p confProposal) {
	if _, waiting := n.waiters[n.confPending]; waiting && n.confPending != 0 {
		// Raft would drop this change (one at a time); answer at once
		// rather than let the proposer wait for an entry that never comes.
		p.done <- ErrConfChangePending
		return
	}
	if err := n.rn.ProposeConfChange(p.cc); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) {
			err = &NotLeaderError{Leader: n.leader.Load()}
		}
		p.done <- err
		return
	}
	n.waiters[p.id] = p.done
	n.confPending = p.id
}

// Membership is the quorum's configuration as this node knows it.
type Membership struct {
	Voters   []uint64
	Learners []uint64 // observers that follow the log without voting
	// Joint: a change of several voters is in progress.
	Joint bool
}

// IsVoter reports whether id votes.
func (m Membership) IsVoter(id uint64) bool { return slices.Contains(m.Voters, id) }

// IsLearner reports whether id follows without voting.
func (m Membership) IsLearner(id uint64) bool { return slices.Contains(m.Learners, id) }

// Membership returns the configuration raft applies now.
func (n *Node) Membership() (Membership, error) {
	st, err := n.Status()
	if err != nil {
		return Membership{}, err
	}
	var m Membership
	ids := st.Config.Voters.IDs()
	for id := range ids {
		m.Voters = append(m.Voters, id)
	}
	for id := range st.Config.Learners {
		m.Learners = append(m.Learners, id)
	}
	for id := range st.Config.LearnersNext {
		m.Learners = append(m.Learners, id)
	}
	m.Joint = len(st.Config.Voters[1]) > 0
	slices.Sort(m.Voters)
	slices.Sort(m.Learners)
	return m, nil
}
