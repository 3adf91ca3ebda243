// FindCoordinator (key 10), v0–v6: this single node coordinates every group (key type 0)
// and every transactional id (key type 1); v4+ answers each of the batched coordinator
// keys. An unknown key type gets INVALID_REQUEST. Differs from Kafka: there is no
// COORDINATOR_NOT_AVAILABLE window, since __consumer_offsets is created at start-up.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.FindCoordinator, (*Broker).handleFindCoordinator) }

func (b *Broker) handleFindCoordinator(_ context.Context, r *wire.Request, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	host, port := b.endpoint(r)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code, msg := int16(0), (*string)(nil)
	if req.CoordinatorType != 0 && req.CoordinatorType != 1 {
		code = kerr.InvalidRequest.Code
		msg = kmsg.StringPtr("Unknown coordinator type.")
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		if code == 0 {
			if req.CoordinatorType == 0 && req.CoordinatorKey == "" {
				resp.ErrorCode = kerr.InvalidGroupID.Code
				return resp, nil
			}
			resp.NodeID, resp.Host, resp.Port = b.nodeID, host, port
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		switch {
		case code != 0:
			c.ErrorCode, c.ErrorMessage = code, msg
		case req.CoordinatorType == 0 && key == "":
			c.ErrorCode = kerr.InvalidGroupID.Code
		default:
			c.NodeID, c.Host, c.Port = b.nodeID, host, port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
