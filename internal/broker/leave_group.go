// LeaveGroup (key 13), v0–v5: v0–v2 remove one member by id, v3+ a batch by member id
// and/or group.instance.id with a per-member error (internal/group).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.LeaveGroup, (*Broker).handleLeaveGroup) }

func (b *Broker) handleLeaveGroup(_ context.Context, r *wire.Request, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	if resp := b.groupReadDenied(r, req); resp != nil { // authorize_groups.go
		return resp, nil
	}
	return b.groups.LeaveGroup(req), nil
}
