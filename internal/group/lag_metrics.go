package group

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descCommitted = prometheus.NewDesc("sluice_consumer_group_committed_offset",
		"Committed offset of a consumer group for a partition.", []string{"group", "topic", "partition"}, nil)
	descLag = prometheus.NewDesc("sluice_consumer_group_lag",
		"Records between a group's committed offset and the partition's high watermark (never negative).",
		[]string{"group", "topic", "partition"}, nil)
	descMembers = prometheus.NewDesc("sluice_consumer_group_members",
		"Members of a consumer group.", []string{"group"}, nil)
)

// Collector exports committed offsets, consumer lag per group and partition, and member
// counts. Register it on the broker's registry (metrics are never global).
func (c *Coordinator) Collector() prometheus.Collector { return lagCollector{c} }

type lagCollector struct{ c *Coordinator }

func (l lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCommitted
	ch <- descLag
	ch <- descMembers
}

func (l lagCollector) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		group string
		tp    topicPartition
		off   int64
	}
	var rows []row
	members := make(map[string]int)
	l.c.mu.Lock()
	for id, g := range l.c.groups {
		if g.consumer != nil {
			members[id] = len(g.consumer.members)
		} else {
			members[id] = len(g.members)
		}
		for tp, o := range g.offsets {
			rows = append(rows, row{id, tp, o.offset})
		}
	}
	l.c.mu.Unlock()
	for id, n := range members {
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(n), id)
	}
	for _, r := range rows {
		p := strconv.Itoa(int(r.tp.partition))
		ch <- prometheus.MustNewConstMetric(descCommitted, prometheus.GaugeValue, float64(r.off), r.group, r.tp.topic, p)
		if end, ok := l.c.topics.EndOffset(r.tp.topic, r.tp.partition); ok {
			lag := end - r.off
			if lag < 0 {
				lag = 0
			}
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(lag), r.group, r.tp.topic, p)
		}
	}
}
