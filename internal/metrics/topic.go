package metrics

import (
	"maps"
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
// The hot path does one lookup in a copy-on-write map (an atomic pointer)
// per partition of a request and atomic adds; a topic's counters are created
// on its first use and dropped when it is deleted.

// TopicTotals are one topic's counters since the broker started (or since
// the topic was re-created).
type TopicTotals struct {
	BytesIn, MessagesIn, BytesOut int64
}

// topicStats are one topic's live counters.
type topicStats struct {
	bytesIn, messagesIn, bytesOut atomic.Int64
}

type topicCounters struct {
	mu    sync.Mutex // serialises writers of topic
	topic atomic.Pointer[map[string]*topicStats]
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
	c := &topicCounters{}
	c.topic.Store(&map[string]*topicStats{})
	return c
}

// get returns topic's counters, creating them on first use.
func (c *topicCounters) get(topic string) *topicStats {
	if s := (*c.topic.Load())[topic]; s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := *c.topic.Load()
	if s := cur[topic]; s != nil {
		return s
	}
	next := maps.Clone(cur)
	s := &topicStats{}
	next[topic] = s
	c.topic.Store(&next)
	return s
}

func (c *topicCounters) drop(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := *c.topic.Load()
	if _, ok := cur[topic]; !ok {
		return
	}
	next := maps.Clone(cur)
	delete(next, topic)
	c.topic.Store(&next)
}

// live returns the counters of the topics that exist, dropping the others.
func (c *topicCounters) live() map[string]*topicStats {
	cur := *c.topic.Load()
	exists := c.exists.Load()
	if exists == nil {
		return cur
	}
	var gone []string
	for t := range cur {
		if !(*exists)(t) {
			gone = append(gone, t)
		}
	}
	if len(gone) == 0 {
		return cur
	}
	for _, t := range gone {
		c.drop(t)
	}
	return *c.topic.Load()
}

// Describe implements prometheus.Collector.
func (c *topicCounters) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range topicDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *topicCounters) Collect(ch chan<- prometheus.Metric) {
	for topic, s := range c.live() {
		v := [3]float64{float64(s.bytesIn.Load()), float64(s.messagesIn.Load()), float64(s.bytesOut.Load())}
		for i, d := range topicDescs {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v[i%3], topic)
		}
	}
}

// TopicProduced counts a produce request's batch appended by the leader of
// one of topic's partitions: n record bytes holding records records.
func (m *Metrics) TopicProduced(topic string, n, records int64) {
	if m == nil {
		return
	}
	s := m.topics.get(topic)
	s.bytesIn.Add(n)
	s.messagesIn.Add(records)
}

// TopicFetched counts n record bytes of topic served to a consumer.
func (m *Metrics) TopicFetched(topic string, n int64) {
	if m == nil {
		return
	}
	m.topics.get(topic).bytesOut.Add(n)
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
	for t, s := range cur {
		out[t] = TopicTotals{BytesIn: s.bytesIn.Load(), MessagesIn: s.messagesIn.Load(), BytesOut: s.bytesOut.Load()}
	}
	return out
}
