// AlterPartitionReassignments (key 45), v0–v1.
//
// Every partition of a single node has exactly one replica, on this node.
// Each requested partition is answered on its own, as Apache Kafka's
// controller answers:
//
//   - unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION with a message;
//   - target replicas exactly [this node]: success, nothing changes (Kafka,
//     too, succeeds without a change when the target is the current
//     assignment);
//   - null replicas (cancel a reassignment): NO_REASSIGNMENT_IN_PROGRESS,
//     since none ever is;
//   - any other target: INVALID_REPLICA_ASSIGNMENT with Kafka's reasons — an
//     empty list, a broker that is not registered (any id but this node's),
//     a broker listed twice.
//
// On a cluster node the active controller reassigns (cluster_reassign.go,
// internal/controller/reassign.go): the target's new replicas fetch the
// partition, and once they are all in sync the replicas become the target,
// the removed ones delete their copy, and a removed leader gives way.
//
// v1 (KIP-860, Kafka 4.1+): with allow_replication_factor_change false, a
// target with another number of replicas than the partition has (counting
// a reassignment in progress by its target) is refused with
// INVALID_REPLICATION_FACTOR, after the checks above; the answer echoes the
// flag. v0 and v1 with the flag true (its default) change nothing.

package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.AlterPartitionAssignments, (*Broker).handleAlterPartitionReassignments)
}

func (b *Broker) handleAlterPartitionReassignments(_ context.Context, r *wire.Request, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !b.allowedCluster(r, authz.OpAlter) { // Kafka: ALTER on the cluster
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if err := b.reassignPartition(t.Topic, p.Partition, p.Replicas, allowRF); err != nil {
				rp.ErrorCode, rp.ErrorMessage = err.Code, kmsg.StringPtr(err.Msg)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// reassignPartition validates one target assignment; nil means the target
// is the current one. allowRF false refuses a change of the replication
// factor (v1); on a single node every valid target is [this node], so
// none can.
func (b *Broker) reassignPartition(topic string, partition int32, replicas []int32, allowRF bool) *Error {
	if b.cluster != nil {
		return b.cluster.reassignCluster(topic, partition, replicas, allowRF)
	}
	t, ok := b.topics.Get(topic)
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
	}
	if partition < 0 || partition >= t.Partitions {
		return errorf(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topic, partition)
	}
	if replicas == nil {
		return errorf(kerr.NoReassignmentInProgress, "No partition reassignment is in progress for %s:%d.", topic, partition)
	}
	if len(replicas) == 0 {
		return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Clone(replicas)
	slices.Sort(sorted)
	for i, id := range sorted {
		if !b.isLiveBroker(id) {
			return errorf(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return nil
}
