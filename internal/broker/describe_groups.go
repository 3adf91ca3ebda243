// DescribeGroups (key 15), v0–v6: state, protocol type and selected protocol of classic
// groups; member metadata and assignments only when Stable, as Kafka. Unknown (or
// KIP-848) groups are Dead, with GROUP_ID_NOT_FOUND from v6 (KIP-1043).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeGroups, (*Broker).handleDescribeGroups) }

func (b *Broker) handleDescribeGroups(_ context.Context, r *wire.Request, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	return b.describeGroupsAuthorized(r, req), nil // authorize_groups.go
}
