// UnregisterBroker (key 64), v0: removes a broker's registration
// (decommissioning; kafka-cluster unregister --id N), ALTER on the cluster.
//
// On a cluster node the active controller removes it
// (internal/controller/unregister.go) as Kafka's does: unknown ids get
// BROKER_ID_NOT_REGISTERED ("Broker ID N is not currently registered");
// otherwise the broker leaves every leadership and in-sync set and its
// registration is gone, so Metadata and DescribeCluster stop listing it.
// Kafka does not refuse a running broker, and neither does Sluice; a running
// broker registers again with its next heartbeat, so the procedure is:
// reassign its partitions away, stop it, unregister it (docs/cluster.md).
//
// A single node is the only broker: other ids get BROKER_ID_NOT_REGISTERED.
//
// Differences from Kafka: a single node answers its own id INVALID_REQUEST
// (it cannot unregister itself).

package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.UnregisterBroker, (*Broker).handleUnregisterBroker) }

func (b *Broker) handleUnregisterBroker(_ context.Context, r *wire.Request, req *kmsg.UnregisterBrokerRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !b.allowedCluster(r, authz.OpAlter) { // Kafka: ALTER on the cluster
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	c := b.cluster
	if c == nil {
		if req.BrokerID == b.self() {
			resp.ErrorCode = kerr.InvalidRequest.Code
			resp.ErrorMessage = kmsg.StringPtr("A single node cannot unregister itself.")
		} else {
			resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID))
		}
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var out controller.UnregisterResponse
	err := callController(ctx, c, "unregister-broker", c.ctrl.Unregister, controller.UnregisterRequest{BrokerID: req.BrokerID}, &out)
	if err == nil {
		err = c.waitPublished(ctx, out.Offset)
	}
	if err != nil {
		err = asBrokerError(err)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	b.logger.Info("broker unregistered", "broker", req.BrokerID)
	return resp, nil
}
