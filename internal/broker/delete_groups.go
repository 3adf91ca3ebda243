// DeleteGroups (key 42), v0–v2: deletes empty groups with their offsets (tombstones in
// __consumer_offsets); NON_EMPTY_GROUP if members remain, GROUP_ID_NOT_FOUND if there is
// no such group. An empty share group is deleted with its share-partition state
// (tombstones in __share_group_state).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteGroups, (*Broker).handleDeleteGroups) }

func (b *Broker) handleDeleteGroups(_ context.Context, _ *wire.Request, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	if b.shares == nil {
		return b.groups.DeleteGroups(req), nil
	}
	// share groups are answered here, the others by the group coordinator
	shareCodes := map[string]int16{}
	other := *req
	other.Groups = nil
	for _, id := range req.Groups {
		if b.shares.Exists(id) {
			shareCodes[id] = b.shares.Delete(id)
		} else {
			other.Groups = append(other.Groups, id)
		}
	}
	if len(shareCodes) == 0 {
		return b.groups.DeleteGroups(req), nil
	}
	resp := b.groups.DeleteGroups(&other)
	byID := map[string]kmsg.DeleteGroupsResponseGroup{}
	for _, g := range resp.Groups {
		byID[g.Group] = g
	}
	resp.Groups = resp.Groups[:0]
	for _, id := range req.Groups {
		if code, ok := shareCodes[id]; ok {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		resp.Groups = append(resp.Groups, byID[id])
	}
	return resp, nil
}
