// UpdateRaftVoter (key 82, v0; KIP-853): a voter of the metadata quorum
// tells the quorum's leader its endpoints and the kraft.version range it
// supports, and the leader commits them. As in Kafka 4.x:
//
//   - every voter sends one for itself once it runs as a voter (at start,
//     and after AddRaftVoter promoted it) when the metadata does not hold
//     what it would say: its controller listener's name, host and port and
//     its kraft.version range (voterUpdateLoop below). Sluice's voters speak
//     the peer protocol, so this one travels as the peer method
//     update-voter; the Kafka request below takes the same path;
//   - the leader checks the request (INCONSISTENT_CLUSTER_ID,
//     FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH against its leader epoch,
//     INVALID_REQUEST without a directory id, without listeners, without
//     the leader's default controller listener among them or with a
//     kraft.version range that excludes the finalized level,
//     VOTER_NOT_FOUND for a node that does not vote, REQUEST_TIMED_OUT
//     while another change of the voters is in progress), records the
//     endpoints and the range in the metadata (a quorum-node record) and
//     answers once that is committed. From then on the quorum reaches the
//     voter at its default listener's address, and DescribeQuorum v2 lists
//     the endpoints (describe_quorum.go).
//
// Kafka serves it on controller listeners only; Sluice's controller listener
// speaks the peer protocol, so a broker listener takes it and forwards it to
// the active controller (as AddRaftVoter). It needs CLUSTER_ACTION on the
// cluster (the controllers' own principal, as Kafka). CurrentLeader names
// the active controller, its leader epoch and its endpoint on the listener
// the request came through (empty host and port -1 when it has none there).
// Directory ids are required but not checked (a node id names one member).
package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.UpdateRaftVoter, (*Broker).handleUpdateRaftVoter) }

// updateVoterRequest is what a voter tells the quorum's leader.
type updateVoterRequest struct {
	ID int32 `json:"id"`
	// Epoch is the leader epoch (raft term) the sender knows; checked
	// when CheckEpoch (a Kafka request), not for a voter's own update,
	// which any leader may take.
	Epoch      int32                     `json:"epoch"`
	CheckEpoch bool                      `json:"check_epoch,omitempty"`
	Listeners  []metadata.QuorumListener `json:"listeners"`
	KRaft      metadata.VersionRange     `json:"kraft"`
}

// updateVoterResponse names the leader that took the update.
type updateVoterResponse struct {
	Leader uint64 `json:"leader"`
	Term   uint64 `json:"term"`
}

// updateVoter runs on the quorum's leader.
func (c *clusterNode) updateVoter(ctx context.Context, req updateVoterRequest) (updateVoterResponse, error) {
	term := c.node.Term()
	if l := c.node.Leader(); l != uint64(c.cfg.nodeID) {
		return updateVoterResponse{}, &controller.Error{Code: kerr.NotController.Code, Msg: "not the quorum leader", Leader: l}
	}
	resp := updateVoterResponse{Leader: uint64(c.cfg.nodeID), Term: term}
	if req.CheckEpoch {
		switch {
		case int64(req.Epoch) < int64(term):
			return resp, &controller.Error{Code: kerr.FencedLeaderEpoch.Code, Msg: fmt.Sprintf("leader epoch %d is older than the leader's (%d)", req.Epoch, term)}
		case int64(req.Epoch) > int64(term):
			return resp, &controller.Error{Code: kerr.UnknownLeaderEpoch.Code, Msg: fmt.Sprintf("leader epoch %d is newer than the leader's (%d)", req.Epoch, term)}
		}
	}
	if req.ID <= 0 {
		return resp, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: "voter id must be at least 1"}
	}
	if len(req.Listeners) == 0 {
		return resp, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: "no listeners"}
	}
	if req.KRaft.Min < 0 || req.KRaft.Max < req.KRaft.Min {
		return resp, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("bad kraft.version range %d-%d", req.KRaft.Min, req.KRaft.Max)}
	}
	m, err := c.node.Membership()
	if err != nil {
		return resp, quorumError(err)
	}
	if m.Joint {
		return resp, &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: "another change of the voters is in progress; retry"}
	}
	im := c.store.Image()
	if lvl := im.Features[features.KRaftVersion]; lvl < req.KRaft.Min || lvl > req.KRaft.Max {
		return resp, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
			"the finalized kraft.version %d is outside the supported range %d-%d", lvl, req.KRaft.Min, req.KRaft.Max)}
	}
	var def *metadata.QuorumListener
	seen := map[string]bool{}
	for i, l := range req.Listeners {
		name := strings.ToUpper(l.Name)
		if name == "" || l.Host == "" || l.Port == 0 || seen[name] {
			return resp, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("bad or repeated listener %q %s:%d", l.Name, l.Host, l.Port)}
		}
		seen[name] = true
		req.Listeners[i].Name = name
		if name == strings.ToUpper(c.cfg.peerListener) {
			def = &req.Listeners[i]
		}
	}
	if def == nil {
		return resp, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
			"the listeners do not include the quorum's default controller listener %s", c.cfg.peerListener)}
	}
	if !m.IsVoter(uint64(req.ID)) {
		return resp, &controller.Error{Code: kerr.VoterNotFound.Code, Msg: fmt.Sprintf("node %d is not a voter", req.ID)}
	}
	kv := req.KRaft
	q := metadata.QuorumNode{Address: net.JoinHostPort(def.Host, strconv.Itoa(int(def.Port))), Controller: true,
		Listeners: req.Listeners, KRaftVersions: &kv}
	if old, ok := im.QuorumNode(req.ID); ok && old.Equal(q) {
		return resp, nil
	}
	rec := metadata.Record{Type: metadata.SetQuorumNode, BrokerID: req.ID, Address: q.Address, Controller: true,
		Listeners: q.Listeners, KRaftVersions: q.KRaftVersions}
	if err := c.node.Propose(ctx, metadata.Batch{Records: []metadata.Record{rec}}.Encode()); err != nil {
		return resp, quorumError(err)
	}
	if req.ID != c.cfg.nodeID {
		c.peers.SetAddr(uint64(req.ID), q.Address)
	}
	// A lone voter's endpoint is only its address in the metadata (its
	// controller port is not served): not worth an info line claiming one.
	lvl := slog.LevelInfo
	if req.ID == c.cfg.nodeID && c.cfg.localOnly {
		lvl = slog.LevelDebug
	}
	c.logger.Log(ctx, lvl, "updated a voter's endpoints", "node_id", req.ID, "listeners", req.Listeners,
		"kraft_version_min", kv.Min, "kraft_version_max", kv.Max)
	return resp, nil
}

// ownVoterInfo is what this node tells the quorum of itself as a voter.
func (c *clusterNode) ownVoterInfo() (updateVoterRequest, bool) {
	host, port, err := splitHostPort(c.peerAddr)
	if err != nil {
		return updateVoterRequest{}, false
	}
	f, _ := features.Lookup(features.KRaftVersion)
	return updateVoterRequest{ID: c.cfg.nodeID,
		Listeners: []metadata.QuorumListener{{Name: strings.ToUpper(c.cfg.peerListener), Host: host, Port: port}},
		KRaft:     metadata.VersionRange{Min: f.Min, Max: f.Max}}, true
}

// voterUpdateLoop sends this node's UpdateRaftVoter once it is a voter and
// the metadata does not hold its endpoints and kraft.version range: once
// per run (as Kafka's voter sends it once per leader), so that what an
// operator's UpdateRaftVoter recorded since stays until the next restart.
func (c *clusterNode) voterUpdateLoop(ctx context.Context) {
	if !c.cfg.controller {
		return
	}
	own, ok := c.ownVoterInfo()
	if !ok {
		return
	}
	want := metadata.QuorumNode{Address: c.peerAddr, Controller: true, Listeners: own.Listeners, KRaftVersions: &own.KRaft}
	for {
		ch := c.store.Changed()
		m, err := c.node.Membership()
		if err == nil && m.IsVoter(uint64(c.cfg.nodeID)) && c.node.Leader() != 0 {
			if q, ok := c.store.Image().QuorumNode(c.cfg.nodeID); ok && q.Equal(want) {
				c.voterTold.Store(true)
				return
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var resp updateVoterResponse
			req := own
			req.Listeners = append([]metadata.QuorumListener(nil), own.Listeners...)
			err := callController(rctx, c, "update-voter", c.updateVoter, req, &resp)
			cancel()
			if err == nil {
				lvl := slog.LevelInfo
				if c.cfg.localOnly {
					lvl = slog.LevelDebug // not served (cluster_node.go)
				}
				c.logger.Log(ctx, lvl, "told the quorum this voter's endpoints", "listeners", own.Listeners, "leader", resp.Leader)
				c.voterTold.Store(true)
				return
			}
			if ctx.Err() == nil {
				c.logger.Debug("updating this voter's endpoints; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-time.After(time.Second): // membership changes are not image changes
		}
	}
}

func (b *Broker) handleUpdateRaftVoter(ctx context.Context, r *wire.Request, req *kmsg.UpdateRaftVoterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch, resp.CurrentLeader.Port = -1, -1, -1
	if !b.allowedCluster(r, authz.OpClusterAction) { // Kafka: CLUSTER_ACTION on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	c := b.cluster
	if c == nil {
		resp.ErrorCode = kerr.InvalidRequest.Code // a single node runs no metadata quorum
		return resp, nil
	}
	leader, term := c.node.Leader(), c.node.Term()
	defer func() {
		resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = int32(leader), int32(term)
		if leader == 0 {
			resp.CurrentLeader.LeaderID = -1
		}
		if reg, ok := c.store.Image().Broker(int32(leader)); ok {
			if ep, ok := reg.Endpoint(b.listenerName(r)); ok {
				resp.CurrentLeader.Host, resp.CurrentLeader.Port = ep.Host, int32(ep.Port)
			}
		}
	}()
	if req.ClusterID != nil && *req.ClusterID != "" && *req.ClusterID != b.ClusterID() {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	if req.VoterDirectoryID == ([16]byte{}) || len(req.Listeners) == 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	ur := updateVoterRequest{ID: req.VoterID, Epoch: req.CurrentLeaderEpoch, CheckEpoch: true,
		KRaft: metadata.VersionRange{Min: req.KRaftVersionFeature.MinSupportedVersion, Max: req.KRaftVersionFeature.MaxSupportedVersion}}
	for _, l := range req.Listeners {
		ur.Listeners = append(ur.Listeners, metadata.QuorumListener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out updateVoterResponse
	err := callController(cctx, c, "update-voter", c.updateVoter, ur, &out)
	if out.Leader != 0 {
		leader, term = out.Leader, out.Term
	} else {
		leader, term = c.node.Leader(), c.node.Term()
	}
	if err != nil {
		resp.ErrorCode = errorCode(asBrokerError(err))
		if resp.ErrorCode == kerr.NotController.Code {
			resp.ErrorCode = kerr.NotLeaderForPartition.Code // NOT_LEADER_OR_FOLLOWER: Kafka's answer when this node does not lead
		}
	}
	return resp, nil
}
