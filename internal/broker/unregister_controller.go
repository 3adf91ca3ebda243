// UnregisterController (key 94), v0: removes a controller's registration
// (Admin.unregisterController; kafka-cluster unregister-controller --id N;
// kafka-metadata-quorum remove-controller --unregister), ALTER on the
// cluster. A broker forwards it to the active controller, as Kafka's do.
//
// Sluice's controller registrations are the quorum-node records of nodes
// with the controller role (every member records its peer address when it
// joins, cluster_roles.go). The active controller answers as Kafka's does:
// its own id gets INVALID_REQUEST ("Controller cannot unregister itself
// while it is active."), an id with no controller registration gets
// CONTROLLER_ID_NOT_REGISTERED ("Controller ID N is not currently
// registered."), a finalized metadata.version below 4.4-IV2 (33) gets
// UNSUPPORTED_VERSION. Otherwise one unregister-controller record removes
// the registration, and the node also leaves raft's configuration, where a
// removed voter stays a learner (cluster_voters.go): DescribeQuorum
// (kafka-metadata-quorum describe --status) no longer lists it as an
// observer. A node that starts again joins again, as a restarted Kafka
// controller registers again.
//
// Differences from Kafka: a controller that is still a voter is refused
// with INVALID_REQUEST (remove it from the voters first, RemoveRaftVoter:
// Sluice's quorum reaches its voters through these records), and so is one
// that still follows the metadata log (it did not stay silent towards the
// quorum's leader for half an election timeout within three of them: stop
// it first; Kafka's running controller registers again at once). A single node answers its own id
// INVALID_REQUEST and any other CONTROLLER_ID_NOT_REGISTERED.

package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.UnregisterController, (*Broker).handleUnregisterController) }

// controllerUnregistrationMV is metadata.version 4.4-IV2, the first with
// controller unregistration in Kafka.
const controllerUnregistrationMV = 33

// unregisterControllerRequest asks the quorum's leader to unregister a
// controller.
type unregisterControllerRequest struct {
	ID int32 `json:"id"`
}

func (b *Broker) handleUnregisterController(ctx context.Context, r *wire.Request, req *kmsg.UnregisterControllerRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	if !b.allowedCluster(r, authz.OpAlter) { // Kafka: ALTER on the cluster
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	c := b.cluster
	if c == nil {
		if req.ControllerID == b.self() {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(unregisterActiveMessage)
		} else {
			resp.ErrorCode, resp.ErrorMessage = kerr.ControllerIDNotRegistered.Code, kmsg.StringPtr(controllerNotRegistered(req.ControllerID))
		}
		return resp, nil
	}
	cctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	var out struct{}
	err := callController(cctx, c, "unregister-controller", c.unregisterController, unregisterControllerRequest{ID: req.ControllerID}, &out)
	if err != nil {
		be := asBrokerError(err)
		resp.ErrorCode, resp.ErrorMessage = errorCode(be), kmsg.StringPtr(be.Error())
		return resp, nil
	}
	b.logger.Info("controller unregistered", "controller", req.ControllerID)
	return resp, nil
}

const unregisterActiveMessage = "Controller cannot unregister itself while it is active."

func controllerNotRegistered(id int32) string {
	return fmt.Sprintf("Controller ID %d is not currently registered.", id)
}

// unregisterController runs on the quorum's leader (the active controller).
func (c *clusterNode) unregisterController(ctx context.Context, req unregisterControllerRequest) (struct{}, error) {
	id := uint64(req.ID)
	if l := c.node.Leader(); l != uint64(c.cfg.nodeID) {
		return struct{}{}, &controller.Error{Code: kerr.NotController.Code, Msg: "not the quorum leader", Leader: l}
	}
	im := c.store.Image()
	if mv, ok := im.Features[features.MetadataVersion]; ok && mv < controllerUnregistrationMV {
		return struct{}{}, &controller.Error{Code: kerr.UnsupportedVersion.Code,
			Msg: "The current MetadataVersion is too old to support controller unregistration."}
	}
	if req.ID == c.cfg.nodeID {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: unregisterActiveMessage}
	}
	if q, ok := im.QuorumNode(req.ID); !ok || !q.Controller {
		return struct{}{}, &controller.Error{Code: kerr.ControllerIDNotRegistered.Code, Msg: controllerNotRegistered(req.ID)}
	}
	m, err := c.node.Membership()
	if err != nil {
		return struct{}{}, quorumError(err)
	}
	if m.IsVoter(id) {
		return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
			"Controller %d is a voter of the metadata quorum; remove it from the voters first (RemoveRaftVoter, kafka-metadata-quorum remove-controller).", req.ID)}
	}
	if m.IsLearner(id) {
		if err := c.waitInactive(ctx, id); err != nil {
			return struct{}{}, err
		}
		// The configuration again: it may have changed during the wait.
		if m, err = c.node.Membership(); err != nil {
			return struct{}{}, quorumError(err)
		}
		if m.IsVoter(id) {
			return struct{}{}, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
				"Controller %d became a voter of the metadata quorum; remove it from the voters first.", req.ID)}
		}
	}
	if m.IsLearner(id) {
		if m.Joint {
			return struct{}{}, &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: "a change of the voters is in progress; retry"}
		}
		// Out of raft's configuration first: a retry after a failure below
		// finds the registration still there.
		if err := c.node.ProposeConfChange(ctx, confChange(raftpb.ConfChangeType_ConfChangeRemoveNode, id)); err != nil {
			return struct{}{}, quorumError(err)
		}
	}
	rec := metadata.Record{Type: metadata.UnregisterController, BrokerID: req.ID}
	if err := c.node.Propose(ctx, metadata.Batch{Records: []metadata.Record{rec}}.Encode()); err != nil {
		return struct{}{}, quorumError(err)
	}
	c.logger.Info("unregistered a controller (it left the metadata quorum's observers)", "node_id", id)
	return struct{}{}, nil
}

// waitInactive waits until learner id has stayed silent (not answered the
// quorum's leader, and no connection of it open to this node) for an
// election timeout, up to three election timeouts more. Raft marks every
// member inactive at each election timeout and active again at its next
// answer, so a running node looks inactive only for a moment (a stall of a
// busy machine can make that moment long: the open connections, which a
// stopped process no longer has, tell it apart); and raft counts a member
// just added back as a learner (RemoveRaftVoter of a stopped voter) as
// active until that first mark. A node still answering is refused.
func (c *clusterNode) waitInactive(ctx context.Context, id uint64) error {
	quiet := 10 * c.cfg.tick                          // an election timeout (ten ticks)
	deadline := time.Now().Add(30*c.cfg.tick + quiet) // three election timeouts, then the quiet time
	var since time.Time                               // when id was first seen silent, zero while it answers
	for {
		st, err := c.node.Status()
		if err != nil {
			return quorumError(err)
		}
		now := time.Now()
		if pr, ok := st.Progress[id]; (!ok || !pr.RecentActive) && c.srv.OpenConns(id) == 0 {
			if since.IsZero() {
				since = now
			}
			if !ok || now.Sub(since) >= quiet {
				return nil
			}
		} else {
			since = time.Time{}
		}
		if now.After(deadline) {
			return &controller.Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(
				"Controller %d is still running (it follows the metadata log); stop it first.", id)}
		}
		select {
		case <-ctx.Done():
			return &controller.Error{Code: kerr.RequestTimedOut.Code, Msg: "timed out waiting to see whether controller " + fmt.Sprint(id) + " still runs"}
		case <-time.After(c.cfg.tick / 4):
		}
	}
}
