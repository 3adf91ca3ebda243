package metrics

import "github.com/prometheus/client_golang/prometheus"

// consumerFetch is sluice_consumer_fetch_bytes_total: record bytes served to
// consumers (not to follower replicas), by this broker's role for the
// partition ("leader", or "follower" under follower fetching, KIP-392).
func newConsumerFetch(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_consumer_fetch_bytes_total",
		Help: "Record bytes served to consumers' fetches, by this broker's role for the partition (leader, or follower with follower fetching).",
	}, []string{"role"})
	c.WithLabelValues("leader")
	c.WithLabelValues("follower")
	reg.MustRegister(c)
	return c
}

// ConsumerFetched counts n record bytes served to a consumer by a broker in
// role ("leader" or "follower").
func (m *Metrics) ConsumerFetched(role string, n int64) {
	m.consumerFetch.WithLabelValues(role).Add(float64(n))
}
