// OffsetDelete (key 47), v0: removes committed offsets of topics the group does not
// subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise); GROUP_ID_NOT_FOUND for unknown
// groups, NON_EMPTY_GROUP for a non-empty group whose subscriptions cannot be read.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.OffsetDelete, (*Broker).handleOffsetDelete) }

func (b *Broker) handleOffsetDelete(_ context.Context, r *wire.Request, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	return b.offsetDeleteAuthorized(r, req), nil // authorize_groups.go
}
