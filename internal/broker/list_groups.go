// ListGroups (key 16), v0–v5: every group, with its state (v4+) and type (v5+); the
// states and types filters are case-insensitive.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListGroups, (*Broker).handleListGroups) }

func (b *Broker) handleListGroups(_ context.Context, r *wire.Request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	return b.listGroupsAuthorized(r, req), nil // authorize_groups.go
}
