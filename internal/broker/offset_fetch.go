// OffsetFetch (key 9), v1–v10 (v10 names topics by id, offset_topic_ids.go): committed offsets of one group (v1–v7) or several (v8+); a
// null topic list means every committed partition. An unknown group or uncommitted
// partition answers offset -1 with no error, as Kafka does. With require_stable (v7+), a
// partition with a transactional offset commit still pending (TxnOffsetCommit whose
// transaction has not ended) answers UNSTABLE_OFFSET_COMMIT, which clients retry.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.OffsetFetch, (*Broker).handleOffsetFetch) }

func (b *Broker) handleOffsetFetch(_ context.Context, r *wire.Request, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	if req.Version >= topicIDVersion {
		return b.offsetFetchByID(r, req), nil // offset_topic_ids.go
	}
	return b.offsetFetchAuthorized(r, req), nil // authorize_groups.go
}
