// ShareGroupDescribe (key 77), v1: share groups with their members, subscriptions and
// assignments. A group that does not exist (or is not a share group) is
// GROUP_ID_NOT_FOUND.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ShareGroupDescribe, (*Broker).handleShareGroupDescribe) }

func (b *Broker) handleShareGroupDescribe(_ context.Context, _ *wire.Request, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	return b.shares.Describe(req), nil
}
