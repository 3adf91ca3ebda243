// DescribeTopicPartitions (key 75), v0: topic and partition metadata with
// pagination (KIP-966). Topics are described in name order; an empty topic
// list means every topic. At most min(response_partition_limit, 2000)
// partitions are returned; next_cursor then points at the first partition
// left out. A cursor naming a topic that was not requested starts at the
// next requested topic in name order.
//
// On a single node every partition is led by this node at epoch 0 with ISR =
// replicas = [this node]; on a cluster the metadata says, with the eligible
// leader replicas and last known ELR the controller keeps (KIP-966, elr.go).

package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeTopicPartitions, (*Broker).handleDescribeTopicPartitions) }

// maxDescribePartitions is Kafka's max.request.partition.size.limit default.
const maxDescribePartitions = 2000

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, r *wire.Request, req *kmsg.DescribeTopicPartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribePartitions {
		limit = maxDescribePartitions
	}

	var names []string
	if len(req.Topics) == 0 {
		for _, t := range b.topics.List() {
			if !b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, t.Name) {
				continue // only the topics the principal may describe
			}
			names = append(names, t.Name)
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}

	var startPartition int32
	if c := req.Cursor; c != nil {
		i, found := slices.BinarySearch(names, c.Topic)
		names = names[i:]
		if found {
			startPartition = max(c.Partition, 0)
		}
	}

	for i, name := range names {
		from := int32(0)
		if i == 0 {
			from = startPartition
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		if len(req.Topics) > 0 && !b.allowed(r, authz.OpDescribe, authz.ResourceTopic, name) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		t, ok := b.topics.Get(name)
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if topics.ValidateName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = t.ID
		rt.IsInternal = topics.IsInternal(name)
		rt.AuthorizedOperations = b.authorizedOps(r, authz.ResourceTopic, name)
		for p := from; p < t.Partitions; p++ {
			if limit == 0 {
				cur := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
				cur.Topic, cur.Partition = name, p
				resp.NextCursor = &cur
				break
			}
			limit--
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition = p
			pi := b.partitionInfo(name, p)
			rp.LeaderID, rp.LeaderEpoch = pi.Leader, pi.LeaderEpoch
			rp.Replicas, rp.ISR = pi.Replicas, pi.ISR
			if pi.Leader == replica.NoLeader {
				rp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			// Nullable in the schema, but the Java admin client dereferences
			// them: empty lists, as Kafka sends (elr.go).
			rp.EligibleLeaderReplicas, rp.LastKnownELR = b.partitionELR(name, p)
			rp.OfflineReplicas = pi.Offline
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
		if limit == 0 && i+1 < len(names) {
			cur := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
			cur.Topic, cur.Partition = names[i+1], 0
			resp.NextCursor = &cur
			break
		}
	}
	return resp, nil
}
