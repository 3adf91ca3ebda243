package broker

// Adding and removing voters of the metadata quorum (KIP-853), as etcd
// raft configuration changes proposed by the quorum's leader:
//
//   - add-voter promotes an observer with the controller role (a node
//     started with controller.quorum.bootstrap.servers that joined as a
//     raft learner) to a voter, once it has every committed entry, as
//     Kafka's leader waits for the new voter to catch up;
//   - remove-voter takes a voter out of raft's configuration and adds it
//     back as a learner: a node that still runs keeps following the log
//     without voting and can be promoted again or stopped, and one that lost
//     its disk can start over empty. A leader asked to remove itself hands
//     the lead to another voter first, which then removes it.
//
// Raft applies one change at a time and commits each under the old and the
// new configuration as its rules require; the configuration lives in raft's
// log and in every snapshot's ConfState.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/sluice-broker/sluice/internal/controller"
)

// voterChangeRequest asks the quorum's leader to add or remove a voter.
type voterChangeRequest struct {
	ID int32 `json:"id"`
	// Timeout bounds the wait for an observer to catch up (add).
	TimeoutMs int32 `json:"timeout_ms,omitempty"`
}

func (c *clusterNode) registerVoterHandlers() {
	handle(c.srv, "add-voter", c.addVoter)
	handle(c.srv, "remove-voter", c.removeVoter)
	handle(c.srv, "update-voter", c.updateVoter)                   // update_raft_voter.go
	handle(c.srv, "unregister-controller", c.unregisterController) // unregister_controller.go
}

// addVoter runs on the quorum's leader.
func (c *clusterNode) addVoter(ctx context.Context, req voterChangeRequest) (struct{}, error) {
	id := uint64(req.ID)
	if req.ID <= 0 {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: "voter id must be at least 1"}
	}
	if l := c.node.Leader(); l != uint64(c.cfg.nodeID) {
		return struct{}{}, &controller.Error{Code: kerr.NotController.Code, Msg: "not the quorum leader", Leader: l}
	}
	m, err := c.node.Membership()
	if err != nil {
		return struct{}{}, quorumError(err)
	}
	if m.Joint {
		return struct{}{}, &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: "another change of the voters is in progress; retry"}
	}
	if m.IsVoter(id) {
		return struct{}{}, &controller.Error{Code: kerr.DuplicateVoter.Code, Msg: fmt.Sprintf("node %d is already a voter", id)}
	}
	q, known := c.store.Image().QuorumNode(req.ID)
	if !m.IsLearner(id) || !known {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
			"node %d is not an observer of the metadata quorum: start it with process.roles including controller and "+
				"controller.quorum.bootstrap.servers (without controller.quorum.voters), then add it", id)}
	}
	if !q.Controller {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
			"node %d has no controller role (process.roles); only a controller can be a voter", id)}
	}
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.waitCaughtUp(wctx, id); err != nil {
		return struct{}{}, err
	}
	if err := c.node.ProposeConfChange(wctx, confChange(raftpb.ConfChangeType_ConfChangeAddNode, id)); err != nil {
		return struct{}{}, quorumError(err)
	}
	c.logger.Info("added a voter to the metadata quorum", "node_id", id, "peer_address", q.Address)
	return struct{}{}, nil
}

// waitCaughtUp waits until observer id holds every entry this leader has
// committed, so that promoting it cannot stall the quorum.
func (c *clusterNode) waitCaughtUp(ctx context.Context, id uint64) error {
	for {
		st, err := c.node.Status()
		if err != nil {
			return quorumError(err)
		}
		if pr, ok := st.Progress[id]; ok && pr.State == tracker.StateReplicate && pr.Match >= st.HardState.GetCommit() {
			return nil
		}
		select {
		case <-ctx.Done():
			return &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: fmt.Sprintf(
				"observer %d has not caught up with the metadata log in time (is it running and reachable?)", id)}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// resetMember removes node id from raft's configuration and adds it back
// as a learner: a running node keeps following the log as an observer, and
// the leader forgets how far its log reached, so a node that lost its disk
// can start over empty (raft would otherwise tell it of a commit index
// beyond its empty log).
func (c *clusterNode) resetMember(ctx context.Context, id uint64) error {
	if err := c.node.ProposeConfChange(ctx, confChange(raftpb.ConfChangeType_ConfChangeRemoveNode, id)); err != nil {
		return quorumError(err)
	}
	if err := c.node.ProposeConfChange(ctx, confChange(raftpb.ConfChangeType_ConfChangeAddLearnerNode, id)); err != nil {
		return quorumError(err)
	}
	return nil
}

// removeVoter runs on the quorum's leader.
func (c *clusterNode) removeVoter(ctx context.Context, req voterChangeRequest) (struct{}, error) {
	id := uint64(req.ID)
	if l := c.node.Leader(); l != uint64(c.cfg.nodeID) {
		return struct{}{}, &controller.Error{Code: kerr.NotController.Code, Msg: "not the quorum leader", Leader: l}
	}
	m, err := c.node.Membership()
	if err != nil {
		return struct{}{}, quorumError(err)
	}
	if m.Joint {
		return struct{}{}, &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: "another change of the voters is in progress; retry"}
	}
	if !m.IsVoter(id) {
		return struct{}{}, &controller.Error{Code: kerr.VoterNotFound.Code, Msg: fmt.Sprintf("node %d is not a voter", id)}
	}
	if len(m.Voters) == 1 {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("node %d is the only voter; add another first", id)}
	}
	if id == uint64(c.cfg.nodeID) {
		// The leader removing itself hands the lead over first; the
		// caller's retry reaches the new leader.
		for _, v := range m.Voters {
			if v != id && c.node.TransferLeadership(ctx, v) == nil {
				break
			}
		}
		return struct{}{}, &controller.Error{Code: kerr.NotController.Code, Msg: "handed the lead over to remove this node", Leader: c.node.Leader()}
	}
	if err := c.resetMember(ctx, id); err != nil {
		return struct{}{}, err
	}
	c.logger.Info("removed a voter from the metadata quorum (it stays an observer while it runs)", "node_id", id)
	return struct{}{}, nil
}
