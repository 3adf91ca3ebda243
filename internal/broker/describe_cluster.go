// DescribeCluster (key 60), v0–v2: cluster id, controller (this node) and the
// broker list (this node, never fenced). Only the BROKERS endpoint type (1)
// is served; asking for controllers (2) gets UNSUPPORTED_ENDPOINT_TYPE, as
// from a Kafka broker.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeCluster, (*Broker).handleDescribeCluster) }

func (b *Broker) handleDescribeCluster(_ context.Context, r *wire.Request, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("The endpoint type requested is not supported by this broker.")
		return resp, nil
	}
	resp.ClusterID = b.ClusterID()
	resp.ControllerID = b.controllerID()
	for _, cb := range b.liveBrokers(r) {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = cb.id, cb.host, cb.port, cb.rack
		resp.Brokers = append(resp.Brokers, br)
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = allClusterOps
		if b.authz != nil { // Kafka: the operations if DESCRIBE is allowed, else none
			resp.ClusterAuthorizedOperations = 0
			if b.allowedQuiet(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName) {
				resp.ClusterAuthorizedOperations = b.authorizedOps(r, authz.ResourceCluster, authz.ClusterName)
			}
		}
	} else {
		resp.ClusterAuthorizedOperations = notRequestedOps
	}
	return resp, nil
}
