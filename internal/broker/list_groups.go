// ListGroups (key 16), v0–v5: every group, with its state (v4+) and type (v5+); the
// states and types filters are case-insensitive. Share groups (internal/share) are
// listed after the classic and consumer groups, with protocol type and group type
// "share".
package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListGroups, (*Broker).handleListGroups) }

func (b *Broker) handleListGroups(_ context.Context, _ *wire.Request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := b.groups.ListGroups(req)
	if resp.ErrorCode != 0 || b.shares == nil {
		return resp, nil
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
	for _, g := range b.shares.List() {
		if !match(req.StatesFilter, g.State) || !match(req.TypesFilter, "share") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State, "share"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}
