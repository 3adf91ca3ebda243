// ConsumerGroupHeartbeat (key 68), v0–v1: the KIP-848 consumer protocol, with broker-
// side "uniform" and "range" assignors and member epochs. Consumer-group state is stored
// in __consumer_offsets (Kafka's coordinator records, key types 3–8) and reloaded at
// start-up, so members keep their ids, epochs and partitions across a restart. With
// group.version finalized at 0 (UpdateFeatures) it answers UNSUPPORTED_VERSION, as Kafka.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ConsumerGroupHeartbeat, (*Broker).handleConsumerGroupHeartbeat) }

func (b *Broker) handleConsumerGroupHeartbeat(_ context.Context, r *wire.Request, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	if resp := b.groupReadDenied(r, req); resp != nil { // authorize_groups.go
		return resp, nil
	}
	if b.featureLevel(features.GroupVersion) < 1 { // group.version 0: the consumer protocol is off, as in Kafka
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = kmsg.StringPtr("The consumer group protocol is disabled (group.version is 0).")
		return resp, nil
	}
	return b.groups.ConsumerGroupHeartbeat(groupClient(r), req), nil
}
