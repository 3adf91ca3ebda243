package metrics

import "github.com/prometheus/client_golang/prometheus"

// AuthCounters count SASL authentications, re-authentications (KIP-368) and
// connections closed because their session expired, as Kafka's
// successful-/failed-(re)authentication-total and
// expired-connections-killed-count.
type AuthCounters struct {
	auth    *prometheus.CounterVec
	reauth  *prometheus.CounterVec
	expired prometheus.Counter
}

// RegisterAuth creates the SASL counters on m's registry.
func (m *Metrics) RegisterAuth() *AuthCounters {
	a := &AuthCounters{
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sasl_authentications_total",
			Help: "SASL authentications (first ones on a connection), by mechanism and result (success, failure).",
		}, []string{"mechanism", "result"}),
		reauth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sasl_reauthentications_total",
			Help: "SASL re-authentications on an open connection (KIP-368), by mechanism and result (success, failure).",
		}, []string{"mechanism", "result"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_sasl_expired_sessions_closed_total",
			Help: "Connections closed because their SASL session expired without re-authentication.",
		}),
	}
	m.Registry.MustRegister(a.auth, a.reauth, a.expired)
	return a
}

// Authenticated counts one completed exchange.
func (a *AuthCounters) Authenticated(mechanism string, reauth, ok bool) {
	if a == nil {
		return
	}
	v, result := a.auth, "success"
	if reauth {
		v = a.reauth
	}
	if !ok {
		result = "failure"
	}
	v.WithLabelValues(mechanism, result).Inc()
}

// ExpiredClosed counts one connection closed on an expired session.
func (a *AuthCounters) ExpiredClosed() {
	if a != nil {
		a.expired.Inc()
	}
}
