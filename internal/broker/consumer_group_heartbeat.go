// ConsumerGroupHeartbeat (key 68), v0–v1: the KIP-848 consumer protocol, with broker-
// side "uniform" and "range" assignors and member epochs. Differs from Kafka: consumer-
// group state (not offsets) is kept in memory only, so after a restart members get
// UNKNOWN_MEMBER_ID and rejoin.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ConsumerGroupHeartbeat, (*Broker).handleConsumerGroupHeartbeat) }

func (b *Broker) handleConsumerGroupHeartbeat(_ context.Context, r *wire.Request, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	return b.groups.ConsumerGroupHeartbeat(groupClient(r), req), nil
}
