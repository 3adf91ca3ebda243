// DeleteGroups (key 42), v0–v3 (v3 adds a per-group ErrorMessage, left null
// here): deletes empty groups with their offsets (tombstones in
// __consumer_offsets); NON_EMPTY_GROUP if members remain, GROUP_ID_NOT_FOUND if there is
// no such group. An empty share group is deleted with its share-partition state
// (tombstones in __share_group_state; share_group_admin.go).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteGroups, (*Broker).handleDeleteGroups) }

func (b *Broker) handleDeleteGroups(_ context.Context, r *wire.Request, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return b.deleteGroupsWithShares(r, req), nil // share_group_admin.go, then authorize_groups.go
}
