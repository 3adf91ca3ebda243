// Share groups in ListGroups and DeleteGroups, with the same authorization as the other
// groups (authorize_groups.go): ListGroups shows a share group to a principal that may
// DESCRIBE the cluster or the group; DeleteGroups needs DELETE on the group
// (GROUP_AUTHORIZATION_FAILED).
package broker

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

// listShareGroups appends the share groups matching req's filters to resp.
func (b *Broker) listShareGroups(r *wire.Request, req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	if resp.ErrorCode != 0 || b.shares == nil {
		return
	}
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	all := b.authz == nil || b.allowedQuiet(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName)
	for _, g := range b.shares.List() {
		if !match(req.StatesFilter, g.State) || !match(req.TypesFilter, "share") {
			continue
		}
		// Only its coordinator lists a group (an admin client merges every
		// broker's answer): a broker whose __consumer_offsets partition moved
		// away may still hold the group in memory.
		if b.groups != nil && !b.groups.Coordinates(g.ID) {
			continue
		}
		if !all && !b.allowedQuiet(r, authz.OpDescribe, authz.ResourceGroup, g.ID) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State, "share"
		resp.Groups = append(resp.Groups, lg)
	}
}

// deleteGroupsWithShares answers DeleteGroups: share groups here, the others
// through the group coordinator (with its authorization), in request order.
func (b *Broker) deleteGroupsWithShares(r *wire.Request, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	if b.shares == nil {
		return b.deleteGroupsAuthorized(r, req)
	}
	shareCodes := map[string]int16{}
	other := *req
	other.Groups = nil
	for _, id := range req.Groups {
		switch {
		case !b.shares.Exists(id):
			other.Groups = append(other.Groups, id)
		case b.authz != nil && b.groupDenied(r, authz.OpDelete, id):
			shareCodes[id] = kerr.GroupAuthorizationFailed.Code
		default:
			shareCodes[id] = b.shares.Delete(id)
		}
	}
	if len(shareCodes) == 0 {
		return b.deleteGroupsAuthorized(r, req)
	}
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	byID := map[string]kmsg.DeleteGroupsResponseGroup{}
	if len(other.Groups) > 0 {
		for _, g := range b.deleteGroupsAuthorized(r, &other).Groups {
			byID[g.Group] = g
		}
	}
	for _, id := range req.Groups {
		if code, ok := shareCodes[id]; ok {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		resp.Groups = append(resp.Groups, byID[id])
	}
	return resp
}
