package metrics

import (
	"strconv"
	"sync"
	"testing"
)

func topicSeries(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	mf := gather(t, m)[name]
	for _, s := range mf.GetMetric() {
		out[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
	}
	return out
}

func TestTopicCounters(t *testing.T) {
	m := New(nil)
	if got := topicSeries(t, m, "sluice_topic_bytes_in_total"); len(got) != 0 {
		t.Fatalf("series before any traffic: %v", got)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				m.TopicProduced("orders", 100, 3)
				m.TopicFetched("orders", 50)
			}
		}()
	}
	wg.Wait()
	m.TopicProduced("audit", 7, 1)
	for name, want := range map[string]map[string]float64{
		"sluice_topic_bytes_in_total":                      {"orders": 80000, "audit": 7},
		"kafka_server_brokertopicmetrics_bytesin_total":    {"orders": 80000, "audit": 7},
		"sluice_topic_messages_in_total":                   {"orders": 2400, "audit": 1},
		"kafka_server_brokertopicmetrics_messagesin_total": {"orders": 2400, "audit": 1},
		"sluice_topic_bytes_out_total":                     {"orders": 40000, "audit": 0},
		"kafka_server_brokertopicmetrics_bytesout_total":   {"orders": 40000, "audit": 0},
	} {
		got := topicSeries(t, m, name)
		if len(got) != len(want) || got["orders"] != want["orders"] || got["audit"] != want["audit"] {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if tt := m.TopicTotals()["orders"]; tt != (TopicTotals{BytesIn: 80000, MessagesIn: 2400, BytesOut: 40000}) {
		t.Errorf("totals %+v", tt)
	}
	m.TopicDeleted("orders")
	m.TopicDeleted("never-seen")
	if got := topicSeries(t, m, "sluice_topic_bytes_in_total"); len(got) != 1 || got["audit"] != 7 {
		t.Fatalf("after delete: %v", got)
	}
	if _, ok := m.TopicTotals()["orders"]; ok {
		t.Fatal("deleted topic still has totals")
	}
	m.TopicProduced("orders", 5, 1) // re-created: from zero
	if got := m.TopicTotals()["orders"]; got != (TopicTotals{BytesIn: 5, MessagesIn: 1}) {
		t.Fatalf("re-created topic: %+v", got)
	}
	// A produce that raced with a deletion: the counters go when read.
	m.TopicsExist(func(topic string) bool { return topic != "gone" })
	m.TopicProduced("gone", 1, 1)
	if _, ok := m.TopicTotals()["gone"]; ok {
		t.Fatal("counters of a topic that does not exist")
	}
	if got := topicSeries(t, m, "sluice_topic_bytes_in_total"); len(got) != 2 || got["gone"] != 0 {
		t.Fatalf("exported %v", got)
	}
	if _, ok := m.topics.topic["gone"]; ok {
		t.Fatal("counters of a topic that does not exist were kept")
	}
	var nilM *Metrics // a broker without metrics
	nilM.TopicProduced("x", 1, 1)
	nilM.TopicFetched("x", 1)
	nilM.TopicDeleted("x")
}

// BenchmarkTopicProduced is the produce hook's cost per partition batch,
// with 200 topics known: "cached" as the produce path does it (the
// partition's cached counters: a check that they were not dropped and two
// atomic adds), "lookup" by topic name (a map lookup under a mutex).
func BenchmarkTopicProduced(b *testing.B) {
	m := New(nil)
	names := make([]string, 200)
	stats := make([]*TopicStats, len(names))
	for i := range names {
		names[i] = "topic-" + strconv.Itoa(i)
		stats[i] = m.TopicStats(names[i])
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if s := stats[i%len(stats)]; !s.Dropped() {
					s.Produced(1024, 10)
				}
				i++
			}
		})
	})
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.TopicProduced(names[i%len(names)], 1024, 10)
				i++
			}
		})
	})
}

// BenchmarkTopicsFirstTraffic is the cost per topic of n topics' first
// traffic and their deletion (the registry's insert and drop), with n
// topics known at the end: it must not grow with n.
func BenchmarkTopicsFirstTraffic(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		names := make([]string, n)
		for i := range names {
			names[i] = "topic-" + strconv.Itoa(i)
		}
		b.Run("topics="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				m := New(nil)
				for _, t := range names {
					m.TopicProduced(t, 1, 1)
				}
				for _, t := range names {
					m.TopicDeleted(t)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/topic")
		})
	}
}
