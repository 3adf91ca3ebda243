// OffsetForLeaderEpoch (key 23), v2–v4 (Apache Kafka 4's range).
//
// For each partition: the end offset of the requested leader epoch and the
// largest epoch at or below it, from the partition's leader-epoch cache
// (log.EndOffsetForLeaderEpoch, Kafka's rules). This node leads every
// partition with epoch 0, so asking for epoch 0 returns the log end offset
// even before anything was written (Kafka's leader records its epoch when it
// takes over; ours never changes). An unknown or future epoch gets -1/-1.
// current_leader_epoch other than 0 gets FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH (-1 skips the check); unknown partitions
// UNKNOWN_TOPIC_OR_PARTITION. replica_id (v3+) is not used: followers and
// consumers get the same answer.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.OffsetForLeaderEpoch, (*Broker).handleOffsetForLeaderEpoch) }

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *wire.Request, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// Authorization as Kafka: a follower (replica id >= 0) needs
	// CLUSTER_ACTION, a consumer DESCRIBE on each topic.
	var clusterDenied bool
	var denied map[string]bool
	if req.Version >= 3 && req.ReplicaID >= 0 {
		clusterDenied = !b.allowedCluster(r, authz.OpClusterAction)
	} else {
		names := make([]string, len(req.Topics))
		for i, t := range req.Topics {
			names[i] = t.Topic
		}
		denied = b.deniedTopics(r, authz.OpDescribe, names)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			part, _, code := b.partition(t.Topic, p.Partition)
			switch {
			case clusterDenied:
				code = kerr.ClusterAuthorizationFailed.Code
			case denied[t.Topic]:
				code = kerr.TopicAuthorizationFailed.Code
			case code == 0:
				code = part.CheckLeader(p.CurrentLeaderEpoch)
			}
			if code != 0 {
				rp.ErrorCode = code
			} else {
				rp.LeaderEpoch, rp.EndOffset = part.EndOffsetForLeaderEpoch(p.LeaderEpoch)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
