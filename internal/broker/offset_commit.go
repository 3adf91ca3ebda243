// OffsetCommit (key 8), v2–v10 (Kafka 4.4's range; v10 names topics by id,
// offset_topic_ids.go): stores offsets, leader epochs and
// metadata as OffsetCommit records in __consumer_offsets before answering. Generation -1
// commits to an empty or unknown group are simple commits; unknown topics or partitions
// get UNKNOWN_TOPIC_OR_PARTITION; metadata over offset.metadata.max.bytes gets
// OFFSET_METADATA_TOO_LARGE. Differs from Kafka: the v2–v4 retention_time field is
// ignored.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.OffsetCommit, (*Broker).handleOffsetCommit) }

func (b *Broker) handleOffsetCommit(_ context.Context, r *wire.Request, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	if req.Version >= topicIDVersion {
		return b.offsetCommitByID(r, req), nil // offset_topic_ids.go
	}
	return b.offsetCommitAuthorized(r, req), nil // authorize_groups.go
}
