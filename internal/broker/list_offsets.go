// ListOffsets (key 2), v1–v11 (Apache Kafka 4.4's range).
//
// Per partition, by timestamp:
//   - -1 (latest): the high watermark, or with isolation_level=1
//     (read_committed, v2+) the last stable offset;
//   - -2 (earliest) and -4 (earliest local, v8+): the log start offset;
//   - -3 (max timestamp, v7+): the first record with the largest timestamp;
//   - -5 (latest tiered, v9+) and -6 (earliest pending upload, v11+, KIP-1023):
//     no tiered storage, so nothing: -1, as Kafka answers without remote storage;
//   - any other value: the first offset whose record timestamp is at least
//     the value, found through the time index; -1 when there is none.
//
// As Kafka, a timestamp or max-timestamp answer at or past the last
// fetchable offset (the last stable offset for read_committed, else the high
// watermark) is "none" (-1). The answer's timestamp is -1 for -1/-2/-4 and the record's for the others;
// leader_epoch (v4+) is this node's epoch (0) when an offset is returned.
// current_leader_epoch other than 0 gets FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH (-1 skips the check); a partition listed twice gets
// INVALID_REQUEST; unknown partitions UNKNOWN_TOPIC_OR_PARTITION — as Kafka.
// timeout_ms (v10) has nothing to wait for.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListOffsets, (*Broker).handleListOffsets) }

// Special ListOffsets timestamps.
const (
	listLatest                = -1
	listEarliest              = -2
	listMaxTimestamp          = -3
	listEarliestLocal         = -4
	listEarliestPendingUpload = -5 // Kafka's LATEST_TIERED_TIMESTAMP
	listPendingUpload         = -6 // EARLIEST_PENDING_UPLOAD_TIMESTAMP (v11)
)

func (b *Broker) handleListOffsets(_ context.Context, r *wire.Request, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	type tp struct {
		topic     string
		partition int32
	}
	count := map[tp]int{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			count[tp{t.Topic, p.Partition}]++
		}
	}
	// DESCRIBE on each topic (authorize.go), else TOPIC_AUTHORIZATION_FAILED.
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	denied := b.deniedTopics(r, authz.OpDescribe, names)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			if denied[t.Topic] {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if count[tp{t.Topic, p.Partition}] > 1 {
				rp.ErrorCode = kerr.InvalidRequest.Code
			} else {
				b.listOffset(&rp, req.Version, req.Version >= 2 && req.IsolationLevel == 1, t.Topic, p)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) listOffset(rp *kmsg.ListOffsetsResponseTopicPartition, version int16, committed bool, topic string, p kmsg.ListOffsetsRequestTopicPartition) {
	part, _, code := b.partition(topic, p.Partition)
	if code != 0 {
		rp.ErrorCode = code
		return
	}
	current := int32(-1)
	if version >= 4 {
		current = p.CurrentLeaderEpoch
	}
	if c := part.CheckLeader(current); c != 0 {
		rp.ErrorCode = c
		return
	}
	if !part.HighWatermarkKnown() {
		// A new leader whose high watermark has not reached the start of
		// its epoch yet (it may be below the previous leader's): Kafka's
		// OFFSET_NOT_AVAILABLE, retried by clients.
		rp.ErrorCode = kerr.OffsetNotAvailable.Code
		return
	}
	offset, ts, ok := lookupOffset(part, p.Timestamp, version, committed)
	if !ok {
		return
	}
	rp.Offset, rp.Timestamp, rp.LeaderEpoch = offset, ts, part.LeaderEpoch()
}

// lookupOffset resolves a ListOffsets timestamp on one log.
func lookupOffset(l *replica.Partition, ts int64, version int16, committed bool) (offset, timestamp int64, ok bool) {
	lastFetchable := l.HighWatermark()
	if committed {
		lastFetchable = l.LastStableOffset()
	}
	switch {
	case ts == listLatest:
		return lastFetchable, -1, true
	case ts == listEarliest, ts == listEarliestLocal && version >= 8:
		return l.LogStartOffset(), -1, true
	case ts == listMaxTimestamp && version >= 7:
		offset, timestamp, ok = l.MaxTimestamp()
	case ts == listEarliestPendingUpload && version >= 9, ts == listPendingUpload && version >= 11:
		return -1, -1, false
	default:
		offset, timestamp, ok = l.OffsetForTimestamp(ts)
	}
	if ok && offset >= lastFetchable {
		return -1, -1, false
	}
	return offset, timestamp, ok
}
