package console

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/metrics"
)

func TestTrafficHistory(t *testing.T) {
	h := newTrafficHistory()
	t0 := time.Now()
	if tt := h.of("orders"); tt.MessagesInRate != "" || tt.BytesInRate != "" {
		t.Fatalf("rates without samples: %+v", tt)
	}
	h.sample(t0, map[string]metrics.TopicTotals{"orders": {BytesIn: 1000, MessagesIn: 10}})
	if tt := h.of("orders"); tt.MessagesInRate != "" || tt.Totals.MessagesIn != 10 {
		t.Fatalf("one sample: %+v", tt)
	}
	// 10 s later: orders grew, audit got its first traffic (none before).
	h.sample(t0.Add(10*time.Second), map[string]metrics.TopicTotals{
		"orders": {BytesIn: 1000 + 10*2048, MessagesIn: 10 + 50, BytesOut: 10 * 3 << 20},
		"audit":  {BytesIn: 100, MessagesIn: 1},
	})
	for topic, want := range map[string][3]string{
		"orders": {"5.0", "2.0 KiB/s", "3.0 MiB/s"},
		"audit":  {"0.1", "10 B/s", "0 B/s"},
		"idle":   {"0", "0 B/s", "0 B/s"}, // no counters: no traffic
	} {
		tt := h.of(topic)
		if got := [3]string{tt.MessagesInRate, tt.BytesInRate, tt.BytesOutRate}; got != want {
			t.Errorf("%s: rates %v, want %v", topic, got, want)
		}
	}
	// orders deleted and created again: its counters restart from zero.
	h.sample(t0.Add(20*time.Second), map[string]metrics.TopicTotals{"orders": {BytesIn: 512, MessagesIn: 2}, "audit": {BytesIn: 100, MessagesIn: 1}})
	if tt := h.of("orders"); tt.MessagesInRate != "0.2" || tt.BytesInRate != "51 B/s" || tt.Totals.BytesIn != 512 {
		t.Fatalf("re-created topic: %+v", tt)
	}
	// Samples older than a minute leave the rate.
	h.sample(t0.Add(90*time.Second), map[string]metrics.TopicTotals{"orders": {BytesIn: 512, MessagesIn: 2}})
	if tt := h.of("orders"); tt.MessagesInRate != "0" {
		t.Fatalf("after a quiet minute: %+v", tt)
	}
	if _, ok := h.topics["audit"]; ok {
		t.Fatal("a topic without counters (deleted) kept its history")
	}
	if formatByteRate(0) != "0 B/s" || formatByteRate(1536) != "1.5 KiB/s" || formatByteRate(5<<30) != "5.0 GiB/s" {
		t.Fatal("formatByteRate")
	}
}

// The topics pages show the rates and totals of the counters they are
// given, and on a cluster say that they are one broker's.
func TestTopicPagesShowTraffic(t *testing.T) {
	addr, _ := seeded(t)
	for _, clustered := range []bool{false, true} {
		t.Run(fmt.Sprintf("clustered=%v", clustered), func(t *testing.T) {
			// The console samples once at the start (no traffic yet);
			// the test adds the next sample.
			none := func() map[string]metrics.TopicTotals { return nil }
			c, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, LagInterval: time.Hour,
				Traffic: &Traffic{Totals: none, NodeID: 2, Clustered: func() bool { return clustered }}})
			var t0 time.Time
			waitFor(t, "the first traffic sample", 30*time.Second, func() bool {
				c.trafficHist.mu.Lock()
				defer c.trafficHist.mu.Unlock()
				if len(c.trafficHist.times) == 1 {
					t0 = c.trafficHist.times[0]
				}
				return !t0.IsZero()
			})
			c.trafficHist.sample(t0.Add(20*time.Second), map[string]metrics.TopicTotals{"orders": {BytesIn: 20 * 1024, MessagesIn: 100, BytesOut: 40 * 1024}})
			b := newBrowser(t, hs.URL)
			_, body := b.get("/topics")
			mustContain(t, "topics", body, `<td class="num msgs-in">5.0</td><td class="num bytes-in">1.0 KiB/s</td><td class="num bytes-out">2.0 KiB/s</td>`,
				`<td class="num msgs-in">0</td><td class="num bytes-in">0 B/s</td><td class="num bytes-out">0 B/s</td>`, // profiles
				`id="traffic-note"`, "Bytes in/s")
			_, body = b.get("/topics/orders")
			mustContain(t, "topic", body, `id="traffic-table"`,
				`<td class="num rate">5.0</td><td class="num total">100</td>`,
				`<td class="num rate">1.0 KiB/s</td><td class="num total">20480</td>`,
				`<td class="num rate">2.0 KiB/s</td><td class="num total">40960</td>`)
			if got := strings.Contains(body, "node 2"); got != clustered {
				t.Fatalf("topic page names the node: %v, want %v:\n%s", got, clustered, body)
			}
			if _, body = b.get("/topics"); strings.Contains(body, "(node 2) only") != clustered || strings.Contains(body, "Msgs in/s *") != clustered {
				t.Fatalf("topics page cluster label wrong (clustered %v):\n%s", clustered, body)
			}
		})
	}
	// Without the broker's counters, no such columns.
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}})
	if _, body := newBrowser(t, hs.URL).get("/topics"); strings.Contains(body, "msgs-in") || strings.Contains(body, "traffic-note") {
		t.Fatalf("traffic columns without counters:\n%s", body)
	}
}

// With a real broker's counters: the seeded dataset's 30 records and its
// bytes (the log's size) are counted in; consuming them counts bytes out.
func TestTopicTrafficFromTheBroker(t *testing.T) {
	srv := startBroker(t, nil, nil)
	addr := srv.Addr().String()
	cl, adm := adminOf(t, addr)
	seed(t, cl, adm)
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, LagInterval: 100 * time.Millisecond,
		Traffic: &Traffic{Totals: srv.TopicTotals, NodeID: srv.NodeID(), Clustered: srv.Clustered}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var size int64
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		for _, p := range d.Topics["orders"] {
			size += p.Size
		}
	})
	b := newBrowser(t, hs.URL)
	row := func(body, what string) (rate string, total int64) {
		m := regexp.MustCompile(`data-traffic="` + what + `"><td>[^<]*</td><td class="num rate">([^<]*)</td><td class="num total">(\d+)</td>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s row:\n%s", what, body)
		}
		fmt.Sscan(m[2], &total)
		return m[1], total
	}
	var body string
	waitFor(t, "the seeded records in the counters", 60*time.Second, func() bool {
		_, body = b.get("/topics/orders")
		rate, msgs := row(body, "messages-in")
		_, in := row(body, "bytes-in")
		return rate != "" && msgs == 3*ordersPerPartition && in == size
	})
	if _, out := row(body, "bytes-out"); out != 0 {
		t.Fatalf("bytes out %d before any consumer", out)
	}
	if strings.Contains(body, "node 1") {
		t.Fatal("a single node labelled as one node of a cluster")
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < 3*ordersPerPartition; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	waitFor(t, "the consumed bytes in the counters", 60*time.Second, func() bool {
		_, body = b.get("/topics/orders")
		rate, out := row(body, "bytes-out")
		return out >= size && rate != "0 B/s"
	})
	_, body = b.get("/topics")
	if !regexp.MustCompile(`data-topic="orders">.*<td class="num msgs-in">[0-9.]+</td><td class="num bytes-in">[0-9.]+ [KM]?i?B/s</td><td class="num bytes-out">[0-9.]+ [KM]?i?B/s</td>`).MatchString(body) {
		t.Fatalf("topics page lacks the orders traffic:\n%s", body)
	}
}
