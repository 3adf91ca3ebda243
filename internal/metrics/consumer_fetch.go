package metrics

import "github.com/prometheus/client_golang/prometheus"

// consumerFetch is sluice_consumer_fetch_bytes_total: record bytes served to
// consumers (not to follower replicas), by this broker's role for the
// partition ("leader", or "follower" under follower fetching, KIP-392). The
// two children are kept so the fetch path does no label lookup.
type consumerFetch struct {
	leader, follower prometheus.Counter
}

func newConsumerFetch(reg *prometheus.Registry) consumerFetch {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_consumer_fetch_bytes_total",
		Help: "Record bytes served to consumers' fetches, by this broker's role for the partition (leader, or follower with follower fetching).",
	}, []string{"role"})
	reg.MustRegister(c)
	return consumerFetch{leader: c.WithLabelValues("leader"), follower: c.WithLabelValues("follower")}
}

// ConsumerFetched counts n record bytes served to a consumer, by the
// partition's leader or (follower true) by a follower.
func (m *Metrics) ConsumerFetched(follower bool, n int64) {
	if follower {
		m.consumerFetch.follower.Add(float64(n))
		return
	}
	m.consumerFetch.leader.Add(float64(n))
}
