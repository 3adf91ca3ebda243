package console

// Per-topic throughput from the broker's own counters (Kafka's
// BrokerTopicMetrics: bytes in, messages in, bytes out), sampled every
// LagInterval; rates are over the last minute (rateWindow), as records/s.

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/metrics"
)

// Traffic is the broker's per-topic counters, for the console that runs in
// the broker's process.
type Traffic struct {
	// Totals returns every topic's counters (topics without traffic since
	// the broker started may be absent).
	Totals func() map[string]metrics.TopicTotals
	// NodeID is the broker's node id; Clustered (nil: never) says the
	// broker is one of several brokers, whose counters cover only the
	// partitions it leads. It is asked at each page, as brokers may join.
	NodeID    int32
	Clustered func() bool
}

// trafficScope is what the pages say about where the figures come from.
type trafficScope struct {
	Clustered bool
	NodeID    int32
}

// topicTraffic is one topic's figures for the pages: rates ("" before two
// samples) and totals since the broker started.
type topicTraffic struct {
	MessagesInRate, BytesInRate, BytesOutRate string
	Totals                                    metrics.TopicTotals
}

type trafficPoint struct {
	at time.Time
	v  metrics.TopicTotals
}

// trafficHistory keeps the samples of the last rateWindow, and the one
// before them (so that there is a rate once there are two samples).
type trafficHistory struct {
	mu     sync.Mutex
	times  []time.Time // every sample's time
	topics map[string][]trafficPoint
	last   map[string]metrics.TopicTotals
}

func newTrafficHistory() *trafficHistory {
	return &trafficHistory{topics: map[string][]trafficPoint{}, last: map[string]metrics.TopicTotals{}}
}

func (h *trafficHistory) sample(now time.Time, totals map[string]metrics.TopicTotals) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var prev time.Time
	if len(h.times) > 0 {
		prev = h.times[len(h.times)-1]
	}
	h.times = trimTimes(append(h.times, now), now)
	for t, v := range totals {
		pts := h.topics[t]
		if n := len(pts); n > 0 {
			if l := pts[n-1].v; v.BytesIn < l.BytesIn || v.MessagesIn < l.MessagesIn || v.BytesOut < l.BytesOut {
				pts = nil // the topic was deleted and created again
			}
		}
		if len(pts) == 0 && !prev.IsZero() {
			// Its first traffic since the previous sample: it had none then.
			pts = []trafficPoint{{at: prev}}
		}
		pts = append(pts, trafficPoint{at: now, v: v})
		i := 0
		for i < len(pts)-1 && now.Sub(pts[i+1].at) >= rateWindow {
			i++
		}
		h.topics[t] = append([]trafficPoint(nil), pts[i:]...)
	}
	for t := range h.topics {
		if _, ok := totals[t]; !ok {
			delete(h.topics, t)
		}
	}
	h.last = totals
}

func trimTimes(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts)-1 && now.Sub(ts[i+1]) >= rateWindow {
		i++
	}
	return append([]time.Time(nil), ts[i:]...)
}

// of returns topic's figures.
func (h *trafficHistory) of(topic string) topicTraffic {
	h.mu.Lock()
	defer h.mu.Unlock()
	tt := topicTraffic{Totals: h.last[topic]}
	pts := h.topics[topic]
	var first, last trafficPoint
	switch {
	case len(pts) >= 2:
		first, last = pts[0], pts[len(pts)-1]
	case len(h.times) >= 2:
		// No traffic over the samples.
		first, last = trafficPoint{at: h.times[0]}, trafficPoint{at: h.times[len(h.times)-1]}
	default:
		return tt
	}
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return tt
	}
	rate := func(a, b int64) float64 { return max(0, float64(b-a)/secs) }
	tt.MessagesInRate = formatRate(rate(first.v.MessagesIn, last.v.MessagesIn))
	tt.BytesInRate = formatByteRate(rate(first.v.BytesIn, last.v.BytesIn))
	tt.BytesOutRate = formatByteRate(rate(first.v.BytesOut, last.v.BytesOut))
	return tt
}

// formatByteRate is bytes per second with a binary unit.
func formatByteRate(v float64) string {
	if v < 1024 {
		return formatRate(v) + " B/s"
	}
	div, exp := 1024.0, 0
	for v/div >= 1024 && exp < 4 {
		div *= 1024
		exp++
	}
	return fmt.Sprintf("%.1f %ciB/s", v/div, "KMGT"[exp])
}

// traffic returns topic's figures, or nil without the broker's counters.
func (c *Console) traffic(topic string) *topicTraffic {
	if c.trafficHist == nil {
		return nil
	}
	tt := c.trafficHist.of(topic)
	return &tt
}

// trafficScope is nil without the broker's counters.
func (c *Console) trafficScope() *trafficScope {
	if c.opts.Traffic == nil {
		return nil
	}
	clustered := c.opts.Traffic.Clustered != nil && c.opts.Traffic.Clustered()
	return &trafficScope{Clustered: clustered, NodeID: c.opts.Traffic.NodeID}
}

func (c *Console) sampleTraffic() {
	if c.trafficHist != nil {
		c.trafficHist.sample(time.Now(), c.opts.Traffic.Totals())
	}
}
