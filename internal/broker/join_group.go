// JoinGroup (key 11), v0–v9: the classic protocol's join, answered when the rebalance
// completes (the call blocks until then, bounded by the rebalance timeout). New dynamic
// members get MEMBER_ID_REQUIRED first from v4 (KIP-394); static members (v5+,
// group.instance.id) rejoin without a rebalance (KIP-345). All semantics live in
// internal/group.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.JoinGroup, (*Broker).handleJoinGroup) }

func (b *Broker) handleJoinGroup(ctx context.Context, r *wire.Request, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	if resp := b.groupReadDenied(r, req); resp != nil { // authorize_groups.go
		return resp, nil
	}
	resp := b.groups.JoinGroup(ctx, groupClient(r), req)
	if resp == nil { // connection or server closing: nobody to answer
		return nil, ctx.Err()
	}
	return resp, nil
}
