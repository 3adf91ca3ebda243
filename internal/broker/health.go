package broker

// The metrics listener: /metrics, /healthz, /readyz and the compaction
// status. It is bound with the Kafka listeners, before the data directory is
// touched, so that an address that was asked for and cannot be bound stops
// the broker before it creates anything; it serves /healthz from then on.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/compact"
	"github.com/sluice-broker/sluice/internal/config"
)

// Response headers of every answer of the metrics listener, once the data
// directory is open: which broker answered. "sluice compaction status"
// checks them against the cluster id and node id of the Kafka address it
// was given.
const (
	HeaderClusterID = "Sluice-Cluster-Id"
	HeaderNodeID    = "Sluice-Node-Id"
)

// health is the state /healthz and /readyz report.
type health struct {
	mu        sync.Mutex
	ready     bool
	reason    string        // why not ready
	clusterID func() string // the broker's current cluster id
	nodeID    int32
	known     bool // clusterID and nodeID are set
}

func (h *health) set(ready bool, reason string) {
	h.mu.Lock()
	h.ready, h.reason = ready, reason
	h.mu.Unlock()
}

func (h *health) identify(clusterID func() string, nodeID int32) {
	h.mu.Lock()
	h.clusterID, h.nodeID, h.known = clusterID, nodeID, true
	h.mu.Unlock()
}

func (h *health) snapshot() (ready bool, reason, clusterID string, nodeID int32, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.known {
		return h.ready, h.reason, "", h.nodeID, false
	}
	return h.ready, h.reason, h.clusterID(), h.nodeID, h.known
}

// ServeHTTP adds the identity headers, then serves mux.
func (s *Server) withIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, id, node, known := s.health.snapshot(); known {
			w.Header().Set(HeaderClusterID, id)
			w.Header().Set(HeaderNodeID, strconv.Itoa(int(node)))
		}
		next.ServeHTTP(w, r)
	})
}

// bindMetrics binds the metrics listener (a busy default address is only a
// warning) and starts serving /healthz, /readyz and /metrics.
func (s *Server) bindMetrics(b *Broker) error {
	o := &s.opts
	if o.MetricsListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", o.MetricsListen)
	if err != nil && o.MetricsOptional {
		o.Logger.Warn("metrics endpoint not started: its default address is taken (set --metrics-listen to choose another address, \"\" to turn it off)",
			"addr", o.MetricsListen, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("sluice: metrics listener: %w", err)
	}
	s.mln = ln
	b.metricsAddr = ln.Addr().String()
	s.health.set(false, "starting: opening the data directory and loading the logs")
	s.mux = http.NewServeMux()
	s.mux.Handle("/metrics", b.metrics.Handler())
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	s.mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ready, reason, _, _, _ := s.health.snapshot()
		if ready && b.cluster != nil {
			reason = b.cluster.notReady()
			ready = reason == ""
		}
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", reason)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	s.metrics = &http.Server{Handler: s.withIdentity(s.mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("metrics endpoint stopped", "err", err)
		}
	}()
	return nil
}

// metricsReady adds the compaction status once the cleaner runs and marks
// the broker ready: logs loaded, listeners bound and served.
func (s *Server) metricsReady(b *Broker) {
	if s.mux == nil {
		return
	}
	if b.cleaner != nil {
		s.mux.Handle(compact.StatusPath, b.cleaner.StatusHandler())
	}
	s.health.set(true, "")
}

// metricsListenConfig is the broker config that DescribeConfigs reports
// with the metrics listener's bound address.
const metricsListenConfig = "sluice.metrics.listen"

// withMetricsAddr sets sluice.metrics.listen in described broker configs to
// the address actually bound ("" when there is no metrics listener).
func (b *Broker) withMetricsAddr(vals []config.Value) []config.Value {
	for i := range vals {
		if vals[i].Name != metricsListenConfig {
			continue
		}
		if def := vals[i].Def.Default; def == nil || *def != b.metricsAddr {
			vals[i].Source = int8(kmsg.ConfigSourceStaticBrokerConfig)
		}
		vals[i].Value, vals[i].Null = b.metricsAddr, false
	}
	return vals
}
