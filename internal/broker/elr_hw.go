package broker

import (
	"github.com/sluice-broker/sluice/internal/topics"
)

// The high-watermark rule of eligible leader replicas (KIP-966): a leader
// does not advance its high watermark while the in-sync set is smaller
// than min(min.insync.replicas, replication factor). Apache Kafka's
// Partition applies it whether or not eligible.leader.replicas.version is
// finalized, and so does Sluice. A replica that leaves the in-sync set in that state
// stays an eligible leader (internal/controller/elr.go) and may be elected
// cleanly later, so nothing it may lack can have been committed: records
// appended meanwhile (acks=1 or 0; acks=all is refused with
// NOT_ENOUGH_REPLICAS) stay invisible to consumers until the in-sync set
// is large enough again.

// hwMinISR is replica.State.MinISR of a partition of t with replicas
// replicas.
func (b *Broker) hwMinISR(t *topics.Topic, replicas int) int {
	return max(min(int(b.minInsyncReplicas(t)), replicas), 1)
}
