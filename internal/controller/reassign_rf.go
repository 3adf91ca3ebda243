package controller

import (
	"fmt"
	"slices"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// replicationFactorChange is Kafka's check for AlterPartitionReassignments
// v1 with allow_replication_factor_change false (KIP-860): the target must
// have as many replicas as the partition has now, counting the target of
// a reassignment in progress (its replicas and adding ones, without the
// removing ones). "" when it does; else INVALID_REPLICATION_FACTOR's
// message.
func replicationFactorChange(p metadata.Partition, target []int32) string {
	current := len(p.Replicas)
	if p.Reassigning() {
		set := map[int32]bool{}
		for _, r := range slices.Concat(p.Replicas, p.AddingReplicas) {
			set[r] = true
		}
		for _, r := range p.RemovingReplicas {
			delete(set, r)
		}
		current = len(set)
	}
	if current != len(target) {
		return fmt.Sprintf("The replication factor is changed from %d to %d", current, len(target))
	}
	return ""
}
