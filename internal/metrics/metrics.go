// Package metrics owns Sluice's Prometheus instrumentation: the collectors
// for requests (count and latency per API), bytes in and out, connections and
// partitions, registered on an explicitly passed registry (never the global
// one), and the HTTP handler that serves them at /metrics.
//
// It must not reach into broker state: gauges that report state (partition
// counts) take a function supplied by their owner.
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics holds Sluice's collectors. It implements wire.Observer.
type Metrics struct {
	Registry *prometheus.Registry

	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	bytesIn         prometheus.Counter
	bytesOut        prometheus.Counter
	connections     prometheus.Gauge
	connectionsOpen prometheus.Counter
	consumerFetch   consumerFetch  // consumer_fetch.go
	topics          *topicCounters // topic.go

	// byKey caches the per-API children, created on first use (so only APIs
	// that were called are exported), so the hot path does no label lookup.
	byKey [maxKey]atomic.Pointer[apiCollectors]
}

const maxKey = 128

type apiCollectors struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// New creates the collectors and registers them (plus the Go and process
// collectors) on reg; a nil reg gets a fresh registry.
func New(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_requests_total", Help: "Requests handled, by Kafka API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_request_duration_seconds",
			Help:    "Time from a request being read to its response being written, by Kafka API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"api"}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_bytes_in_total", Help: "Request bytes read from clients.",
		}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_bytes_out_total", Help: "Response bytes written to clients.",
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_connections", Help: "Open client connections.",
		}),
		connectionsOpen: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_connections_opened_total", Help: "Client connections accepted.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.connections, m.connectionsOpen,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.consumerFetch = newConsumerFetch(reg)
	m.topics = newTopicCounters()
	reg.MustRegister(m.topics)
	return m
}

// APIName returns Kafka's name for an API key ("Produce", "Fetch", ...).
func APIName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" && n != "Unknown" {
		return n
	}
	return "Unknown" + strconv.Itoa(int(key))
}

// RegisterPartitions adds the sluice_partitions gauge reading count.
func (m *Metrics) RegisterPartitions(count func() int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_partitions", Help: "Partitions hosted by this broker.",
	}, func() float64 { return float64(count()) }))
}

// ConnOpened implements wire.Observer.
func (m *Metrics) ConnOpened() { m.connections.Inc(); m.connectionsOpen.Inc() }

// ConnClosed implements wire.Observer.
func (m *Metrics) ConnClosed() { m.connections.Dec() }

// RequestDone implements wire.Observer.
func (m *Metrics) RequestDone(key, _ int16, elapsed time.Duration, bytesIn, bytesOut int) {
	m.bytesIn.Add(float64(bytesIn + 4))
	if bytesOut > 0 {
		m.bytesOut.Add(float64(bytesOut))
	}
	c := m.api(key)
	c.requests.Inc()
	c.latency.Observe(elapsed.Seconds())
}

func (m *Metrics) api(key int16) *apiCollectors {
	if key >= 0 && key < maxKey {
		if c := m.byKey[key].Load(); c != nil {
			return c
		}
	}
	name := APIName(key)
	c := &apiCollectors{requests: m.requests.WithLabelValues(name), latency: m.latency.WithLabelValues(name)}
	if key >= 0 && key < maxKey {
		m.byKey[key].Store(c) // a racing Store holds the same children
	}
	return c
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ReplicationCounts are the replication gauges' values at one moment.
type ReplicationCounts struct {
	// UnderReplicated: partitions this broker leads whose in-sync set is
	// smaller than their replica set.
	UnderReplicated int
	// Offline: partitions of the cluster without a live leader (reported by
	// the active controller only, as Kafka's OfflinePartitionsCount).
	Offline int
	// ActiveController is 1 on the active controller, else 0.
	ActiveController int
}

// RegisterReplication adds the gauges operators alert on, under Kafka's
// names (kafka_server_replicamanager_underreplicatedpartitions,
// kafka_controller_kafkacontroller_offlinepartitionscount and
// kafka_controller_kafkacontroller_activecontrollercount, as the Prometheus
// JMX exporter names Kafka's MBeans) and Sluice's own.
func (m *Metrics) RegisterReplication(counts func() ReplicationCounts) {
	gauge := func(name, help string, pick func(ReplicationCounts) int) {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(pick(counts())) }))
	}
	under := func(c ReplicationCounts) int { return c.UnderReplicated }
	offline := func(c ReplicationCounts) int { return c.Offline }
	active := func(c ReplicationCounts) int { return c.ActiveController }
	gauge("sluice_under_replicated_partitions", "Partitions this broker leads whose in-sync set is smaller than their replicas.", under)
	gauge("kafka_server_replicamanager_underreplicatedpartitions", "Kafka's UnderReplicatedPartitions (same as sluice_under_replicated_partitions).", under)
	gauge("sluice_offline_partitions", "Partitions without a live leader (active controller only).", offline)
	gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "Kafka's OfflinePartitionsCount (same as sluice_offline_partitions).", offline)
	gauge("sluice_active_controller", "1 on the active controller.", active)
	gauge("kafka_controller_kafkacontroller_activecontrollercount", "Kafka's ActiveControllerCount (same as sluice_active_controller).", active)
}
