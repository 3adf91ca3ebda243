package broker

// Per-topic traffic counters (internal/metrics/topic.go), as Kafka's
// BrokerTopicMetrics: the produce and fetch paths add to the counters each
// partition caches (replica.Partition.TopicStats) once per partition; the
// web console reads them through Server.TopicTotals.

import (
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metrics"
	"github.com/sluice-broker/sluice/internal/replica"
)

// countProduced counts a batch a produce request appended as leader of p
// (an idempotent retry that appended nothing is not counted), in the
// counters p caches: no lookup by topic name.
func (b *Broker) countProduced(p *replica.Partition, records []byte, res log.AppendResult) {
	if !res.Duplicate {
		p.TopicStats(b.metrics).Produced(int64(len(records)), res.LastOffset-res.BaseOffset+1)
	}
}

// topicExists tells the per-topic counters which topics exist.
func (b *Broker) topicExists(name string) bool {
	_, ok := b.topics.Get(name)
	return ok
}

// TopicTotals returns this broker's per-topic counters: bytes and records
// appended by produce requests on the partitions it leads, bytes served to
// consumers.
func (s *Server) TopicTotals() map[string]metrics.TopicTotals {
	return s.broker.metrics.TopicTotals()
}

// NodeID is this broker's node id, and Clustered whether it is one of
// several brokers of a cluster (its per-topic counters then cover only the
// partitions it leads). A lone node, the default one-voter quorum included,
// is not.
func (s *Server) NodeID() int32 { return s.broker.nodeID }
func (s *Server) Clustered() bool {
	c := s.broker.cluster
	return c != nil && len(c.store.Image().Brokers) > 1
}
