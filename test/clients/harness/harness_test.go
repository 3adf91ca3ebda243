package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeJSONL(t *testing.T, dir, name string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollectSummaryAndReport(t *testing.T) {
	dir := t.TempDir()
	writeJSONL(t, dir, "kcat.jsonl",
		`{"client":"kcat","client_version":"1.7.1"}`,
		`{"client":"kcat","test":"quickstart","feature":"produce.tombstone","status":"pass","ms":3}`,
		`{"client":"kcat","test":"zstd","feature":"compression.zstd","status":"fail","detail":"timed out"}`,
	)
	writeJSONL(t, dir, "python.jsonl",
		`{"client":"python","test":"group","feature":"group.classic","status":"skip","detail":"broker does not advertise JoinGroup"}`,
		``,
		`{"client":"python","test":"metadata","status":"pass"}`,
	)
	out := filepath.Join(t.TempDir(), "results.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"collect", "-out", out, "-broker-version", "dev", "-apis", "Produce,Fetch", dir}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a failure); stderr %q", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if got, want := lines[len(lines)-1], "2 passed, 1 failed, 1 skipped"; got != want {
		t.Fatalf("closing line %q, want %q", got, want)
	}
	if !strings.Contains(stdout.String(), "FAIL kcat/zstd: timed out") {
		t.Errorf("failure not listed: %q", stdout.String())
	}
	var rep Report
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 4 || len(rep.Clients) != 1 || rep.Clients[0].Version != "1.7.1" {
		t.Fatalf("report %+v", rep)
	}
	if rep.Results[3].Feature != "metadata" {
		t.Errorf("feature should default to the test name, got %q", rep.Results[3].Feature)
	}
	if strings.Join(rep.BrokerAPIs, ",") != "Produce,Fetch" || rep.BrokerVersion != "dev" {
		t.Errorf("broker fields %q %q", rep.BrokerAPIs, rep.BrokerVersion)
	}
}

func TestCollectAllPassExitsZeroAndOmitsSkipped(t *testing.T) {
	dir := t.TempDir()
	writeJSONL(t, dir, "a.jsonl", `{"client":"go","test":"x","status":"pass"}`)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"collect", "-out", filepath.Join(dir, "r.json"), dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "1 passed, 0 failed" {
		t.Fatalf("closing line %q", got)
	}
}

func TestCollectStrictCountsSkipsAsFailures(t *testing.T) {
	dir := t.TempDir()
	writeJSONL(t, dir, "a.jsonl", `{"client":"go","test":"x","status":"skip","detail":"later"}`)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"collect", "-strict", "-out", filepath.Join(dir, "r.json"), dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.HasSuffix(strings.TrimSpace(stdout.String()), "0 passed, 1 failed") {
		t.Fatalf("output %q", stdout.String())
	}
}

func TestCollectRejectsBadInput(t *testing.T) {
	for name, line := range map[string]string{
		"bad status":   `{"client":"go","test":"x","status":"ok"}`,
		"no client":    `{"test":"x","status":"pass"}`,
		"not json":     `PASS x`,
		"neither kind": `{"client":"go"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeJSONL(t, dir, "a.jsonl", line)
			var stdout, stderr bytes.Buffer
			if code := run([]string{"collect", "-out", filepath.Join(dir, "r.json"), dir}, &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr.String())
			}
		})
	}
	t.Run("empty dir", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		dir := t.TempDir()
		if code := run([]string{"collect", "-out", filepath.Join(dir, "r.json"), dir}, &stdout, &stderr); code != 2 {
			t.Fatalf("exit %d, want 2 (no results is an error)", code)
		}
	})
}

func TestMatrixFoldsCells(t *testing.T) {
	rep := Report{
		GeneratedAt: "now",
		Clients:     []Client{{ID: "kcat", Version: "1.7.1"}},
		Results: []Result{
			{Client: "kcat", Test: "a", Feature: "produce", Status: statusPass},
			{Client: "kcat", Test: "b", Feature: "produce", Status: statusFail, Detail: "boom | x"},
			{Client: "java", Test: "c", Feature: "produce", Status: statusPass},
			{Client: "java", Test: "d", Feature: "group.classic", Status: statusSkip, Detail: "later"},
			{Client: "zig", Test: "e", Feature: "custom.thing", Status: statusPass},
		},
	}
	rep.Summary = summarize(rep.Results, false)
	md := renderMatrix(rep)
	for _, want := range []string{
		"| Feature | kcat (librdkafka) 1.7.1 | Java kafka-clients | zig |",
		"| Produce | **fail** | pass | — |",
		"| Consumer group (classic protocol) | — | skip | — |",
		"| custom.thing | — | — | pass |",
		`- fail kcat/b: boom \| x`,
		"3 passed, 1 failed, 1 skipped",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("matrix lacks %q:\n%s", want, md)
		}
	}
}

func TestFreePort(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"freeport"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	p, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
	if err != nil || p <= 0 || p > 65535 {
		t.Fatalf("port %q: %v", stdout.String(), err)
	}
	stdout.Reset()
	if code := run([]string{"freeport", "-n", "3"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ports := strings.Fields(stdout.String())
	if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("freeport -n 3 printed %q, want 3 distinct ports", stdout.String())
	}
	if code := run([]string{"freeport", "-n", "0"}, &stdout, &stderr); code != 2 {
		t.Fatalf("freeport -n 0: exit %d, want 2", code)
	}
}

func TestUnknownSubcommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"nope"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}

func TestConfigFlags(t *testing.T) {
	c := configFlags{}
	if err := c.Set("cleanup.policy=compact"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("a=b=c"); err != nil {
		t.Fatal(err)
	}
	if *c["cleanup.policy"] != "compact" || *c["a"] != "b=c" {
		t.Fatalf("parsed %v", c)
	}
	for _, bad := range []string{"noequals", "=v"} {
		if err := c.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestCreateTopicNeedsTopic(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"create-topic"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-topic is required") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
