package replica

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/metrics"
)

// A partition caches its topic's counters, and gets new ones after its
// topic's were dropped (the topic deleted): counting never goes into a set
// that is no longer exported.
func TestPartitionTopicStats(t *testing.T) {
	p, err := NewManager(1).Apply(newLog(t), State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(nil)
	s := p.TopicStats(m)
	if s == nil || p.TopicStats(m) != s || m.TopicStats("t") != s {
		t.Fatal("the partition does not cache its topic's counters")
	}
	s.Produced(10, 2)
	if got := m.TopicTotals()["t"]; got != (metrics.TopicTotals{BytesIn: 10, MessagesIn: 2}) {
		t.Fatalf("totals %+v", got)
	}
	m.TopicDeleted("t")
	if !s.Dropped() {
		t.Fatal("dropped counters not marked")
	}
	s2 := p.TopicStats(m)
	if s2 == s || s2.Dropped() {
		t.Fatal("the partition kept its topic's dropped counters")
	}
	s2.Fetched(5)
	if got := m.TopicTotals()["t"]; got != (metrics.TopicTotals{BytesOut: 5}) {
		t.Fatalf("totals after re-creation %+v", got)
	}
	var none *metrics.Metrics // a broker without metrics
	if s := (&Partition{topic: "u"}).TopicStats(none); s != nil {
		t.Fatal("counters without metrics")
	}
	none.TopicStats("u").Produced(1, 1)
	none.TopicStats("u").Fetched(1)
}
