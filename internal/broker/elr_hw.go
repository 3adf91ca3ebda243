package broker

import (
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/topics"
)

// The high-watermark rule of eligible leader replicas (KIP-966): with
// eligible.leader.replicas.version 1 finalized, a leader does not advance
// its high watermark while the in-sync set is smaller than
// min(min.insync.replicas, replication factor), as Apache Kafka's
// Partition does. A replica that leaves the in-sync set in that state
// stays an eligible leader (internal/controller/elr.go) and may be elected
// cleanly later, so nothing it may lack can have been committed: records
// appended meanwhile (acks=1 or 0; acks=all is refused with
// NOT_ENOUGH_REPLICAS) stay invisible to consumers until the in-sync set
// is large enough again.

// hwMinISR is replica.State.MinISR of a partition of t with replicas
// replicas under image im: 0 (no rule) without the feature.
func (b *Broker) hwMinISR(im *metadata.Image, t *topics.Topic, replicas int) int {
	if im == nil || im.Features[features.EligibleLeaderReplicasVersion] < 1 {
		return 0
	}
	return max(min(int(b.minInsyncReplicas(t)), replicas), 1)
}
