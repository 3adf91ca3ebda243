package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// dashboardMetricRE finds the broker's metric names in a PromQL expression
// (Prometheus's own "up" and functions are not the broker's).
var dashboardMetricRE = regexp.MustCompile(`\b(?:sluice|kafka|go|process)_[a-zA-Z0-9_:]*`)

// dashboardMetrics returns every metric name the Grafana dashboard queries,
// in panel targets and template variables.
func dashboardMetrics(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					for _, n := range dashboardMetricRE.FindAllString(s, -1) {
						names[n] = true
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestGrafanaDashboardMetricsExist: every metric deploy/grafana/sluice.json
// queries is exported by a running broker. The broker gets a compacted topic
// that is cleaned once and a consumer group with a commit, so that the
// per-partition and per-group series exist too.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	want := dashboardMetrics(t, filepath.Join("..", "..", "deploy", "grafana", "sluice.json"))
	if len(want) < 20 {
		t.Fatalf("the dashboard queries only %d metrics: %v", len(want), want)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfg, []byte("log.cleaner.backoff.ms=50\noffsets.topic.num.partitions=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, addr, start := startBinary(t, "--config", cfg, "--metrics-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics=(\S+)`).FindStringSubmatch(start)
	if m == nil {
		t.Fatalf("no metrics address: %s", start)
	}
	env := []string{"SLUICE_BOOTSTRAP=" + addr, "SLUICE_CLI_CONFIG=", "HOME=" + dir, "XDG_CONFIG_HOME="}
	mustCLI(t, bin, env, []string{"topic", "create", "profiles", "-p", "1", "-c", "cleanup.policy=compact", "-c", "segment.ms=300"}, "created topic profiles")
	produceN(t, addr, "profiles", 5)
	produceN(t, addr, "profiles", 5)
	mustCLI(t, bin, env, []string{"consume", "profiles", "-g", "billing", "-n", "10"})

	seen := map[string]bool{}
	var missing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGetString(t, "http://"+m[1]+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		for _, line := range strings.Split(body, "\n") {
			if line == "" || line[0] == '#' {
				continue
			}
			if i := strings.IndexAny(line, "{ "); i > 0 {
				seen[line[:i]] = true
			}
		}
		missing = missing[:0]
		for _, n := range want {
			if !seen[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard queries metrics the broker does not export: %v", missing)
		}
		time.Sleep(100 * time.Millisecond) // poll interval; the deadline bounds the wait
	}
}
