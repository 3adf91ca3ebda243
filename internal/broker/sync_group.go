// SyncGroup (key 14), v0–v5: followers wait for the leader's assignment, the leader
// hands it out; REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and
// FENCED_INSTANCE_ID as Kafka returns them (internal/group).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.SyncGroup, (*Broker).handleSyncGroup) }

func (b *Broker) handleSyncGroup(ctx context.Context, r *wire.Request, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	if resp := b.groupReadDenied(r, req); resp != nil { // authorize_groups.go
		return resp, nil
	}
	resp := b.groups.SyncGroup(ctx, req)
	if resp == nil {
		return nil, ctx.Err()
	}
	return resp, nil
}
