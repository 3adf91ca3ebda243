// DeleteGroups (key 42), v0–v2: deletes empty groups with their offsets (tombstones in
// __consumer_offsets); NON_EMPTY_GROUP if members remain, GROUP_ID_NOT_FOUND if there is
// no such group.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteGroups, (*Broker).handleDeleteGroups) }

func (b *Broker) handleDeleteGroups(_ context.Context, r *wire.Request, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return b.deleteGroupsAuthorized(r, req), nil // authorize_groups.go
}
