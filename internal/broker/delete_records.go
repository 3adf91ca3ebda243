// DeleteRecords (key 21), v0–v2.
//
// Moves each partition's log start offset up to the requested offset (-1
// means the high watermark): reads below it fail with OFFSET_OUT_OF_RANGE,
// whole segments below it are deleted, and the new start is checkpointed
// before the answer (log.TruncatePrefix). An offset at or below the current
// start changes nothing. The answer's low_watermark is the log start offset
// afterwards.
//
// Errors, as Kafka: OFFSET_OUT_OF_RANGE for an offset beyond the high
// watermark or negative (other than -1); POLICY_VIOLATION on a topic whose
// cleanup.policy does not include "delete" (compact only);
// UNKNOWN_TOPIC_OR_PARTITION; KAFKA_STORAGE_ERROR when the checkpoint cannot
// be written. Producers whose batches all lie below the new start are
// forgotten (the log tells the producer guard).
//
// With other replicas (a cluster), the answer waits, as Kafka's
// DelayedDeleteRecords, until every live replica's log start offset (each
// follower reports its own in its fetches and follows the leader's) has
// reached the requested offset, up to timeout_ms (REQUEST_TIMED_OUT); its
// low_watermark is then the smallest log start offset over the leader and
// the live followers (replica.LowWatermark).
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteRecords, (*Broker).handleDeleteRecords) }

func (b *Broker) handleDeleteRecords(_ context.Context, r *wire.Request, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var waits []lowWatermarkWait
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	denied := b.deniedTopics(r, authz.OpDelete, names) // Kafka: DELETE on the topic
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LowWatermark = -1
			if denied[t.Topic] {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if w, code := b.deleteRecords(&rp, t.Topic, p); code != 0 {
				rp.ErrorCode = code
			} else if w.part != nil {
				w.topic, w.index = len(resp.Topics), len(rt.Partitions)
				waits = append(waits, w)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	b.waitLowWatermarks(resp, waits, req.TimeoutMillis) // low_watermark.go
	return resp, nil
}

// deleteRecords moves one partition's log start offset on this leader; a
// partition with other replicas also returns what its answer waits for.
func (b *Broker) deleteRecords(rp *kmsg.DeleteRecordsResponseTopicPartition, topic string, p kmsg.DeleteRecordsRequestTopicPartition) (lowWatermarkWait, int16) {
	part, _, code := b.partition(topic, p.Partition)
	if code != 0 {
		return lowWatermarkWait{}, code
	}
	if c := part.CheckLeader(-1); c != 0 {
		return lowWatermarkWait{}, c
	}
	if cfg := part.Config(); !cfg.DeleteRetention {
		b.logger.Info("DeleteRecords refused on a topic without cleanup.policy=delete", "topic", topic, "partition", p.Partition)
		return lowWatermarkWait{}, kerr.PolicyViolation.Code
	}
	required := p.Offset
	if required == -1 {
		required = part.HighWatermark()
	}
	start, err := part.DeleteRecords(p.Offset)
	if err != nil {
		code := errorCode(err)
		if code != kerr.OffsetOutOfRange.Code && code != kerr.NotLeaderForPartition.Code {
			b.logger.Error("DeleteRecords failed", "topic", topic, "partition", p.Partition, "offset", p.Offset, "err", err)
		}
		rp.LowWatermark = part.LogStartOffset()
		return lowWatermarkWait{}, code
	}
	rp.LowWatermark = start
	if len(part.State().Replicas) > 1 {
		return lowWatermarkWait{part: part, required: min(required, start)}, 0
	}
	return lowWatermarkWait{}, 0
}
