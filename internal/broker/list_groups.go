// ListGroups (key 16), v0–v5: every group, with its state (v4+) and type (v5+); the
// states and types filters are case-insensitive. Share groups (internal/share) are
// listed after the classic and consumer groups, with protocol type and group type
// "share" (share_group_admin.go).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListGroups, (*Broker).handleListGroups) }

func (b *Broker) handleListGroups(_ context.Context, r *wire.Request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := b.listGroupsAuthorized(r, req) // authorize_groups.go
	b.listShareGroups(r, req, resp)        // share_group_admin.go
	return resp, nil
}
