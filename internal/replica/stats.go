package replica

import (
	"sync/atomic"

	"github.com/sluice-broker/sluice/internal/metrics"
)

// statsSlot caches the partition's topic's traffic counters
// (metrics.TopicStats), so that the produce and fetch paths count without
// looking the topic up.
type statsSlot struct {
	p atomic.Pointer[metrics.TopicStats]
}

// TopicStats returns the cached counters of the partition's topic, getting
// them from m on first use and again after they were dropped (the topic was
// deleted: a partition object that outlives it counts into a fresh set,
// which the next scrape drops if the topic is gone). nil when m is nil.
func (p *Partition) TopicStats(m *metrics.Metrics) *metrics.TopicStats {
	if s := p.stats.p.Load(); !s.Dropped() {
		return s
	}
	s := m.TopicStats(p.topic)
	p.stats.p.Store(s)
	return s
}
