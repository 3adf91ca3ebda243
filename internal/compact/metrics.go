package compact

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics exposes the status report and pass counters to Prometheus. The
// per-partition gauges are computed at scrape time from Status.
type metrics struct {
	c *Cleaner

	passes       *prometheus.CounterVec
	bytesRead    prometheus.Counter
	bytesWritten prometheus.Counter
	recordsRead  prometheus.Counter
	recordsKept  prometheus.Counter

	dirtyRatio, minRatio, cleanable, activeBytes, activeAge *prometheus.Desc
	checkpoint, lastPass, tombstones, state                 *prometheus.Desc
}

func newMetrics(c *Cleaner) *metrics {
	tp := []string{"topic", "partition"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("sluice_compaction_"+name, help, append(append([]string(nil), tp...), labels...), nil)
	}
	return &metrics{
		c: c,
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_compaction_passes_total",
			Help: "Cleaning passes by result (ok, failed, abandoned)."}, []string{"result"}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_compaction_read_bytes_total",
			Help: "Log bytes read by cleaning passes."}),
		bytesWritten: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_compaction_written_bytes_total",
			Help: "Bytes written to cleaned segments."}),
		recordsRead: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_compaction_read_records_total",
			Help: "Records read by cleaning passes."}),
		recordsKept: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_compaction_kept_records_total",
			Help: "Records kept by cleaning passes."}),
		dirtyRatio:  d("dirty_ratio", "Cleanable bytes / (clean + cleanable bytes)."),
		minRatio:    d("min_cleanable_dirty_ratio", "The partition's min.cleanable.dirty.ratio."),
		cleanable:   d("cleanable_bytes", "Bytes of dirty non-active segments the cleaner may clean now."),
		activeBytes: d("active_segment_bytes", "Size of the active segment (never cleaned until rolled)."),
		activeAge:   d("active_segment_age_seconds", "Age of the active segment."),
		checkpoint:  d("checkpoint_offset", "Cleaner checkpoint: offsets below are cleaned (-1 never)."),
		lastPass:    d("last_pass_timestamp_seconds", "Unix time of the last successful pass (0 never)."),
		tombstones:  d("tombstones_pending", "Tombstones kept, waiting for their delete horizon."),
		state:       d("state", "1 for the reason the partition is (not) being cleaned now.", "reason"),
	}
}

func (m *metrics) observe(res PassResult, err error) {
	switch {
	case err == nil:
		m.passes.WithLabelValues("ok").Inc()
	case isAbandon(err):
		m.passes.WithLabelValues("abandoned").Inc()
	default:
		m.passes.WithLabelValues("failed").Inc()
	}
	m.bytesRead.Add(float64(res.BytesRead))
	m.bytesWritten.Add(float64(res.BytesWritten))
	m.recordsRead.Add(float64(res.RecordsRead))
	m.recordsKept.Add(float64(res.RecordsKept))
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.passes.Describe(ch)
	for _, c := range []prometheus.Collector{m.bytesRead, m.bytesWritten, m.recordsRead, m.recordsKept} {
		c.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{m.dirtyRatio, m.minRatio, m.cleanable, m.activeBytes, m.activeAge, m.checkpoint, m.lastPass, m.tombstones, m.state} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.passes.Collect(ch)
	for _, c := range []prometheus.Collector{m.bytesRead, m.bytesWritten, m.recordsRead, m.recordsKept} {
		c.Collect(ch)
	}
	g := prometheus.GaugeValue
	for _, p := range m.c.Status("").Partitions {
		l := []string{p.Topic, strconv.Itoa(int(p.Partition))}
		ch <- prometheus.MustNewConstMetric(m.dirtyRatio, g, p.DirtyRatio, l...)
		ch <- prometheus.MustNewConstMetric(m.minRatio, g, p.MinCleanableDirtyRatio, l...)
		ch <- prometheus.MustNewConstMetric(m.cleanable, g, float64(p.CleanableBytes), l...)
		ch <- prometheus.MustNewConstMetric(m.activeBytes, g, float64(p.ActiveSegmentBytes), l...)
		ch <- prometheus.MustNewConstMetric(m.activeAge, g, float64(p.ActiveSegmentAgeMs)/1000, l...)
		ch <- prometheus.MustNewConstMetric(m.checkpoint, g, float64(p.Checkpoint), l...)
		ch <- prometheus.MustNewConstMetric(m.lastPass, g, float64(p.LastPassMs)/1000, l...)
		ch <- prometheus.MustNewConstMetric(m.tombstones, g, float64(p.TombstonesPending), l...)
		ch <- prometheus.MustNewConstMetric(m.state, g, 1, append(l, p.Reason)...)
	}
}
