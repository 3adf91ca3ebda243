package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Per-topic traffic, as Kafka's BrokerTopicMetrics with a topic tag:
// record bytes appended by produce requests on the leader (BytesInPerSec),
// records appended (MessagesInPerSec) and record bytes served to consumers'
// fetches, not to follower replicas (BytesOutPerSec). Exported as
// sluice_topic_bytes_in_total, sluice_topic_messages_in_total and
// sluice_topic_bytes_out_total, and under the names the Prometheus JMX
// exporter gives Kafka's meters (kafka_server_brokertopicmetrics_bytesin_total,
// …_messagesin_total, …_bytesout_total).
//
// The hot path does no map lookup: a partition caches its topic's counters
// (TopicStats, got once with Metrics.TopicStats) and adds to them
// atomically. The registry of topics is a map under a mutex, touched only
// on a topic's first traffic through a partition object, on its deletion
// and on a scrape, so its cost grows linearly with the topics (it was a
// copy-on-write map cloned on every insert and drop: quadratic).

// TopicTotals are one topic's counters since the broker started (or since
// the topic was re-created).
type TopicTotals struct {
	BytesIn, MessagesIn, BytesOut int64
}

// TopicStats are one topic's live counters. A holder (a partition) keeps
// the pointer and checks Dropped before each use: a dropped TopicStats
// (its topic was deleted) is no longer exported, and the holder asks
// Metrics.TopicStats for the current one.
type TopicStats struct {
	bytesIn, messagesIn, bytesOut atomic.Int64
	dropped                       atomic.Bool
}

// Produced counts a batch appended by the leader of one of the topic's
// partitions: n record bytes holding records records.
func (s *TopicStats) Produced(n, records int64) {
	if s != nil {
		s.bytesIn.Add(n)
		s.messagesIn.Add(records)
	}
}

// Fetched counts n record bytes of the topic served to a consumer.
func (s *TopicStats) Fetched(n int64) {
	if s != nil {
		s.bytesOut.Add(n)
	}
}

// Dropped tells whether the topic's counters were dropped (the topic was
// deleted, or found gone by a scrape): a holder must get new ones.
func (s *TopicStats) Dropped() bool { return s == nil || s.dropped.Load() }

type topicCounters struct {
	mu    sync.Mutex
	topic map[string]*TopicStats // under mu
	// exists, when set, tells whether a topic still exists: the counters
	// of one that does not (a produce that raced with its deletion created
	// them again) are dropped when read.
	exists atomic.Pointer[func(string) bool]
}

var (
	topicDescs = [...]*prometheus.Desc{
		prometheus.NewDesc("sluice_topic_bytes_in_total", "Record bytes appended to the topic by produce requests on this broker (the partitions it leads).", []string{"topic"}, nil),
		prometheus.NewDesc("sluice_topic_messages_in_total", "Records appended to the topic by produce requests on this broker (the partitions it leads).", []string{"topic"}, nil),
		prometheus.NewDesc("sluice_topic_bytes_out_total", "Record bytes of the topic served to consumers' fetches by this broker (not to follower replicas).", []string{"topic"}, nil),
		prometheus.NewDesc("kafka_server_brokertopicmetrics_bytesin_total", "Kafka's BytesInPerSec per topic (same as sluice_topic_bytes_in_total).", []string{"topic"}, nil),
		prometheus.NewDesc("kafka_server_brokertopicmetrics_messagesin_total", "Kafka's MessagesInPerSec per topic (same as sluice_topic_messages_in_total).", []string{"topic"}, nil),
		prometheus.NewDesc("kafka_server_brokertopicmetrics_bytesout_total", "Kafka's BytesOutPerSec per topic (same as sluice_topic_bytes_out_total).", []string{"topic"}, nil),
	}
)

func newTopicCounters() *topicCounters {
	return &topicCounters{topic: map[string]*TopicStats{}}
}

// get returns topic's counters, creating them on first use.
func (c *topicCounters) get(topic string) *TopicStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.topic[topic]
	if s == nil {
		s = &TopicStats{}
		c.topic[topic] = s
	}
	return s
}

func (c *topicCounters) drop(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.topic[topic]; s != nil {
		s.dropped.Store(true)
		delete(c.topic, topic)
	}
}

type namedStats struct {
	topic string
	s     *TopicStats
}

// live returns the counters of the topics that exist, dropping the others.
// The exists function is called without the lock held.
func (c *topicCounters) live() []namedStats {
	c.mu.Lock()
	out := make([]namedStats, 0, len(c.topic))
	for t, s := range c.topic {
		out = append(out, namedStats{t, s})
	}
	c.mu.Unlock()
	exists := c.exists.Load()
	if exists == nil {
		return out
	}
	kept := out[:0]
	for _, ns := range out {
		if (*exists)(ns.topic) {
			kept = append(kept, ns)
			continue
		}
		c.mu.Lock()
		if c.topic[ns.topic] == ns.s {
			ns.s.dropped.Store(true)
			delete(c.topic, ns.topic)
		}
		c.mu.Unlock()
	}
	return kept
}

// Describe implements prometheus.Collector.
func (c *topicCounters) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range topicDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *topicCounters) Collect(ch chan<- prometheus.Metric) {
	for _, ns := range c.live() {
		s := ns.s
		v := [3]float64{float64(s.bytesIn.Load()), float64(s.messagesIn.Load()), float64(s.bytesOut.Load())}
		for i, d := range topicDescs {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v[i%3], ns.topic)
		}
	}
}

// TopicStats returns topic's counters, creating them on first use, for a
// holder to cache (see TopicStats.Dropped); nil when m is nil.
func (m *Metrics) TopicStats(topic string) *TopicStats {
	if m == nil {
		return nil
	}
	return m.topics.get(topic)
}

// TopicProduced counts a produce request's batch appended by the leader of
// one of topic's partitions: n record bytes holding records records. It
// looks the topic up; the produce path uses a partition's cached
// TopicStats instead.
func (m *Metrics) TopicProduced(topic string, n, records int64) {
	m.TopicStats(topic).Produced(n, records)
}

// TopicFetched counts n record bytes of topic served to a consumer (a
// lookup, as TopicProduced).
func (m *Metrics) TopicFetched(topic string, n int64) {
	m.TopicStats(topic).Fetched(n)
}

// TopicDeleted drops topic's counters (a topic created again with the name
// starts from zero).
func (m *Metrics) TopicDeleted(topic string) {
	if m != nil {
		m.topics.drop(topic)
	}
}

// TopicsExist sets the function that tells whether a topic exists, so that
// counters a produce racing with a topic's deletion creates again do not
// outlive it.
func (m *Metrics) TopicsExist(exists func(topic string) bool) {
	m.topics.exists.Store(&exists)
}

// TopicTotals returns every topic's counters (only topics with traffic
// since the broker started have any).
func (m *Metrics) TopicTotals() map[string]TopicTotals {
	if m == nil {
		return nil
	}
	cur := m.topics.live()
	out := make(map[string]TopicTotals, len(cur))
	for _, ns := range cur {
		s := ns.s
		out[ns.topic] = TopicTotals{BytesIn: s.bytesIn.Load(), MessagesIn: s.messagesIn.Load(), BytesOut: s.bytesOut.Load()}
	}
	return out
}
