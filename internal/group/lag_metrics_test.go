package group

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestLagMetrics(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 2)
	e.topics.ends[topicPartition{"t", 0}] = 100
	e.c.OffsetCommit(commitReq("g", "", -1, "t", map[int32]int64{0: 40}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.c.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lag, committed float64 = -1, -1
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "sluice_consumer_group_lag":
				lag = m.GetGauge().GetValue()
			case "sluice_consumer_group_committed_offset":
				committed = m.GetGauge().GetValue()
			}
		}
	}
	if lag != 60 || committed != 40 {
		t.Fatalf("lag %v committed %v, want 60 and 40", lag, committed)
	}
}
