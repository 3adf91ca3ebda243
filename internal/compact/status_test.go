package compact

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-broker/sluice/internal/batch"
)

// The status endpoint, the CLI against it, and the metrics report the same
// numbers.
func TestStatusEndpointCLIAndMetrics(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	c, err := New(Options{FS: e.fs, DataDir: "/data", Manager: e.m, DedupeBufferSize: 1 << 20, BackoffMs: 1000,
		TopicConfig: func(string) TopicConfig { return e.tcfg }, Now: e.clock.Now, Logger: quietLogger(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	l := e.log("users")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2"), kv("b", tomb)))
	l.Roll()
	e.append(l, batch.NewBatch(0, ts, kv("c", "1")))
	if _, did := mustRun(t, c); !did {
		t.Fatal("no pass")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(StatusPath, c.StatusHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	var out, errb bytes.Buffer
	code := Command([]string{"status", "users", "--metrics-addr", ln.Addr().String()}, func(string) string { return "" }, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"users", "active_segment", "1 (next in 24h0m0s)", "CHECKPOINT"} {
		if !strings.Contains(s, want) {
			t.Fatalf("status output lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if code := Command([]string{"status", "--json"}, func(k string) string {
		if k == "SLUICE_METRICS_LISTEN" {
			return ln.Addr().String()
		}
		return ""
	}, &out, &errb); code != 0 || !strings.Contains(out.String(), `"tombstones_pending": 1`) {
		t.Fatalf("json: exit %d\n%s", code, out.String())
	}
	errb.Reset()
	if code := Command([]string{"status", "--metrics-addr", "127.0.0.1:1"}, func(string) string { return "" }, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "127.0.0.1:1") {
		t.Fatalf("broker not reachable: exit %d, stderr %q", code, errb.String())
	}
	if code := Command([]string{"status", "nope"}, func(string) string { return ln.Addr().String() }, &out, &errb); code != 1 {
		t.Fatalf("unknown topic: exit %d", code)
	}
	if code := Command([]string{"frobnicate"}, func(string) string { return "" }, &out, &errb); code != 2 {
		t.Fatalf("unknown subcommand: exit %d", code)
	}

	st := c.Status("users").Partitions[0]
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[f.GetName()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[f.GetName()] += m.GetGauge().GetValue()
			}
		}
	}
	if got["sluice_compaction_passes_total"] != 1 || got["sluice_compaction_tombstones_pending"] != 1 ||
		got["sluice_compaction_checkpoint_offset"] != 3 || got["sluice_compaction_state"] != 1 {
		t.Fatalf("metrics %v", got)
	}
	if st.Checkpoint != 3 || st.TombstonesPending != 1 || st.Reason != ReasonActiveSegment || st.ActiveSegmentBytes == 0 {
		t.Fatalf("status %+v", st)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// Workers started with Start clean on their own and stop on Close.
func TestWorkersCleanInBackground(t *testing.T) {
	e := newEnv(t)
	l := e.log("bg")
	ts := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2")))
	l.Roll()
	e.c.Start()
	e.c.Wake()
	deadline := time.Now().Add(10 * time.Second)
	for e.c.Checkpoint("bg", 0) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("background workers did not clean")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if recs, _ := readAll(t, l, 0); len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	e.close()
}

// Without a topic the CLI leaves out internal topics (and says so); named,
// an internal topic is shown.
func TestStatusCLIHidesInternalTopics(t *testing.T) {
	rep := StatusReport{Enabled: true, Partitions: []PartitionStatus{
		{Topic: "__consumer_offsets", Partition: 0}, {Topic: "__consumer_offsets", Partition: 1}, {Topic: "users", Partition: 0},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := rep
		if q := r.URL.Query().Get("topic"); q != "" {
			out.Partitions = nil
			for _, p := range rep.Partitions {
				if p.Topic == q {
					out.Partitions = append(out.Partitions, p)
				}
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out, errb bytes.Buffer
	if code := Command([]string{"status", "--metrics-addr", addr}, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "__consumer_offsets  ") || !strings.Contains(out.String(), "users") ||
		!strings.Contains(out.String(), "2 partitions of internal topics not shown") {
		t.Fatalf("unexpected listing:\n%s", out.String())
	}
	out.Reset()
	if code := Command([]string{"status", "__consumer_offsets", "--metrics-addr", addr}, func(string) string { return "" }, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "__consumer_offsets") {
		t.Fatalf("named internal topic: exit %d\n%s", code, out.String())
	}
}
