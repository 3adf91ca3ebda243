// AddRaftVoter (key 80, v0–v1) and RemoveRaftVoter (key 81, v0): change the
// metadata quorum's voters (KIP-853), as kafka-metadata-quorum
// add-controller / remove-controller and Admin.addRaftVoter /
// removeRaftVoter send them. A broker forwards them to the active
// controller over the peer listener (cluster_voters.go), which applies them
// as etcd raft configuration changes and answers once committed (so v1's
// AckWhenCommitted=false is answered as if true).
//
// Where Sluice differs: the new voter must already run as an observer with
// the controller role (started with controller.quorum.bootstrap.servers);
// its address is the one it joined with, so the request's Listeners are
// not needed, and directory ids are not checked (a node id names one
// quorum member). A removed voter becomes an observer while it keeps
// running. Errors: CLUSTER_AUTHORIZATION_FAILED without ALTER on the
// cluster, INCONSISTENT_CLUSTER_ID, DUPLICATE_VOTER, VOTER_NOT_FOUND,
// INVALID_REQUEST (not an observer, no controller role, the last voter),
// REQUEST_TIMED_OUT (the observer did not catch up, or another change is in
// progress), and INVALID_REQUEST on a single node, which has no quorum.
package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.AddRaftVoter, (*Broker).handleAddRaftVoter)
	register(kmsg.RemoveRaftVoter, (*Broker).handleRemoveRaftVoter)
}

// changeVoters checks a voter change request and sends it to the active
// controller; it returns the answer's error code and message.
func (b *Broker) changeVoters(ctx context.Context, r *wire.Request, method string, clusterID *string, id, timeoutMs int32) (int16, *string) {
	if !b.allowedCluster(r, authz.OpAlter) {
		return kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr("Cluster authorization failed.")
	}
	c := b.cluster
	if c == nil {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("this single-node broker runs no metadata quorum; start it as a cluster node to add voters (docs/cluster.md)")
	}
	if clusterID != nil && *clusterID != "" && *clusterID != b.ClusterID() {
		return kerr.InconsistentClusterID.Code, kmsg.StringPtr("the cluster id " + *clusterID + " is not this cluster's (" + b.ClusterID() + ")")
	}
	wait := 30 * time.Second
	if timeoutMs > 0 {
		wait = time.Duration(timeoutMs) * time.Millisecond
	}
	cctx, cancel := context.WithTimeout(ctx, wait+5*time.Second)
	defer cancel()
	var resp struct{}
	req := voterChangeRequest{ID: id, TimeoutMs: int32(wait / time.Millisecond)}
	local := c.addVoter
	if method == "remove-voter" {
		local = c.removeVoter
	}
	if err := callController(cctx, c, method, local, req, &resp); err != nil {
		be := asBrokerError(err)
		return errorCode(be), kmsg.StringPtr(be.Error())
	}
	return 0, nil
}

func (b *Broker) handleAddRaftVoter(ctx context.Context, r *wire.Request, req *kmsg.AddRaftVoterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	resp.ErrorCode, resp.ErrorMessage = b.changeVoters(ctx, r, "add-voter", req.ClusterID, req.VoterID, req.TimeoutMillis)
	return resp, nil
}

func (b *Broker) handleRemoveRaftVoter(ctx context.Context, r *wire.Request, req *kmsg.RemoveRaftVoterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	resp.ErrorCode, resp.ErrorMessage = b.changeVoters(ctx, r, "remove-voter", req.ClusterID, req.VoterID, 0)
	return resp, nil
}
