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

	var out bytes.Buffer
	rep, _, _, err := FetchStatus(ln.Addr().String(), "users", time.Second)
	if err != nil || !PrintStatus(&out, rep, "users") {
		t.Fatalf("users: %v", err)
	}
	s := out.String()
	for _, want := range []string{"users", "active_segment", "1 (next in 24h0m0s)", "CHECKPOINT"} {
		if !strings.Contains(s, want) {
			t.Fatalf("status output lacks %q:\n%s", want, s)
		}
	}
	if _, raw, _, err := FetchStatus(ln.Addr().String(), "", time.Second); err != nil || !strings.Contains(string(raw), `"tombstones_pending": 1`) {
		t.Fatalf("json: %v\n%s", err, raw)
	}
	if _, _, _, err := FetchStatus("127.0.0.1:1", "", time.Second); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("broker not reachable: %v", err)
	}
	if rep, _, _, err := FetchStatus(ln.Addr().String(), "nope", time.Second); err != nil || PrintStatus(&out, rep, "nope") {
		t.Fatalf("unknown topic: %v, found", err)
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
	var out bytes.Buffer
	rep2, _, _, err := FetchStatus(addr, "", time.Second)
	if err != nil || !PrintStatus(&out, rep2, "") {
		t.Fatalf("status: %v", err)
	}
	if strings.Contains(out.String(), "__consumer_offsets  ") || !strings.Contains(out.String(), "users") ||
		!strings.Contains(out.String(), "2 partitions of internal topics not shown") {
		t.Fatalf("unexpected listing:\n%s", out.String())
	}
	out.Reset()
	rep2, _, _, err = FetchStatus(addr, "__consumer_offsets", time.Second)
	if err != nil || !PrintStatus(&out, rep2, "__consumer_offsets") || !strings.Contains(out.String(), "__consumer_offsets") {
		t.Fatalf("named internal topic: %v\n%s", err, out.String())
	}
}
