// OffsetFetch (key 9), v1–v9: committed offsets of one group (v1–v7) or several (v8+); a
// null topic list means every committed partition. An unknown group or uncommitted
// partition answers offset -1 with no error, as Kafka does. require_stable is accepted
// (no transactions yet, so nothing is ever pending).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.OffsetFetch, (*Broker).handleOffsetFetch) }

func (b *Broker) handleOffsetFetch(_ context.Context, _ *wire.Request, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	return b.groups.OffsetFetch(req), nil
}
