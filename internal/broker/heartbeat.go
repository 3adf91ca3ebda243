// Heartbeat (key 12), v0–v4: keeps a classic member's session alive and tells it about
// rebalances (REBALANCE_IN_PROGRESS), stale generations (ILLEGAL_GENERATION) and fencing
// (internal/group).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.Heartbeat, (*Broker).handleHeartbeat) }

func (b *Broker) handleHeartbeat(_ context.Context, r *wire.Request, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	if resp := b.groupReadDenied(r, req); resp != nil { // authorize_groups.go
		return resp, nil
	}
	return b.groups.Heartbeat(req), nil
}
