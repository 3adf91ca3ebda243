package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func TestRequestMetrics(t *testing.T) {
	m := New(nil)
	m.ConnOpened()
	m.RequestDone(3, 12, 2*time.Millisecond, 100, 200)
	m.RequestDone(3, 12, time.Millisecond, 50, 0)
	m.RequestDone(999, 0, time.Millisecond, 1, 1)
	m.RegisterPartitions(func() int { return 7 })
	f := gather(t, m)

	reqs := f["sluice_requests_total"].GetMetric()
	if len(reqs) != 2 { // only APIs that were called are exported
		t.Fatalf("%d request series", len(reqs))
	}
	got := map[string]float64{}
	for _, s := range reqs {
		got[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
	}
	if got["Metadata"] != 2 || got["Unknown999"] != 1 {
		t.Fatalf("requests %v", got)
	}
	for _, h := range f["sluice_request_duration_seconds"].GetMetric() {
		if h.GetLabel()[0].GetValue() == "Metadata" && h.GetHistogram().GetSampleCount() != 2 {
			t.Fatalf("latency samples %d", h.GetHistogram().GetSampleCount())
		}
	}
	if v := f["sluice_bytes_in_total"].GetMetric()[0].GetCounter().GetValue(); v != 100+50+1+3*4 {
		t.Fatalf("bytes in %v", v)
	}
	if v := f["sluice_bytes_out_total"].GetMetric()[0].GetCounter().GetValue(); v != 201 {
		t.Fatalf("bytes out %v", v)
	}
	if v := f["sluice_connections"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Fatalf("connections %v", v)
	}
	if v := f["sluice_partitions"].GetMetric()[0].GetGauge().GetValue(); v != 7 {
		t.Fatalf("partitions %v", v)
	}
	m.ConnClosed()
	if v := gather(t, m)["sluice_connections"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Fatalf("connections after close %v", v)
	}
}
