// ConsumerGroupDescribe (key 69), v0–v1: KIP-848 groups with epochs, assignor, members
// and their current and target assignments; GROUP_ID_NOT_FOUND for unknown or classic
// groups.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ConsumerGroupDescribe, (*Broker).handleConsumerGroupDescribe) }

func (b *Broker) handleConsumerGroupDescribe(_ context.Context, r *wire.Request, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	return b.consumerGroupDescribeAuthorized(r, req), nil // authorize_groups.go
}
