package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHandlerDifferences(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "produce.go"), "// Produce (key 0), v3–v12: appends.\n//\n"+
		"// Checks things. Differences from Kafka: no transactions, so a\n// transactional batch is refused; broker-\n"+
		"// side checks.\n//\n// Unrelated paragraph.\n\npackage broker\n\n// Differences from Kafka: not in the header.\n")
	writeFile(t, filepath.Join(dir, "fetch.go"), "// Fetch (key 1), v4–v17. Differs from Kafka: no sendfile.\n\npackage broker\n")
	writeFile(t, filepath.Join(dir, "doc.go"), "// Package broker. Differences from Kafka: listed per file.\npackage broker\n")
	writeFile(t, filepath.Join(dir, "produce_test.go"), "// Produce (key 0). Differences from Kafka: test.\npackage broker\n")
	writeFile(t, filepath.Join(dir, "metadata.go"), "// Metadata (key 3): as Kafka.\n\npackage broker\n")
	notes, err := handlerDifferences(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []note{
		{Title: "Fetch", Source: "internal/broker/fetch.go", Text: "no sendfile."},
		{Title: "Produce", Source: "internal/broker/produce.go",
			Text: "no transactions, so a transactional batch is refused; broker-side checks."},
	}
	if len(notes) != len(want) {
		t.Fatalf("notes %+v, want %+v", notes, want)
	}
	for i := range want {
		if notes[i] != want[i] {
			t.Errorf("note %d = %+v, want %+v", i, notes[i], want[i])
		}
	}
}

func TestDocDifferences(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "compaction.md"), "# Compaction\n\n## Knobs\n\ntext\n\n"+
		"## Differences from Kafka\n\n- one\n- two\n\n### Detail\n\nstill in\n\n## Next\n\nout\n")
	writeFile(t, filepath.Join(dir, "compatibility.md"), "## Differences from Kafka\n\n- generated, ignored\n")
	writeFile(t, filepath.Join(dir, "storage.md"), "# Storage\n\nno such section\n")
	notes, err := docDifferences(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Source != "docs/compaction.md" || notes[0].Text != "- one\n- two\n\n### Detail\n\nstill in" {
		t.Fatalf("notes %+v", notes)
	}
}

func TestRenderCompat(t *testing.T) {
	rep := Report{
		GeneratedAt:   "2026-01-01T00:00:00Z",
		BrokerVersion: "dev",
		Clients:       []Client{{ID: "java", Version: "4.4.0"}, {ID: "kafka-tools", Version: "4.4.0"}},
		Results: []Result{
			{Client: "java", Test: "a", Feature: "produce.idempotent", Status: statusPass},
			{Client: "kafka-tools", Test: "t", Feature: "tools.topics", Status: statusPass},
			{Client: "kafka-tools", Test: "d", Feature: "tools.dump-log", Status: statusFail, Detail: "bad index"},
			{Client: "kafka-streams", Test: "w", Feature: "streams.ktable-restore", Status: statusSkip, Detail: "no data dir"},
		},
		BrokerAPIVersions: []APIVersion{{Key: 3, Name: "Metadata", Min: 0, Max: 12}, {Key: 0, Name: "Produce", Min: 0, Max: 12}},
	}
	rep.Summary = summarize(rep.Results, false)
	md := renderCompat(rep, []note{{Title: "Produce", Source: "internal/broker/produce.go", Text: "no txns."}},
		[]note{{Source: "docs/compaction.md", Text: "- keys hashed"}})
	for _, want := range []string{
		"2 passed, 1 failed, 1 skipped",
		"| Java kafka-clients | 4.4.0 | Maven Central `org.apache.kafka:kafka-clients` | 1 of 1 |",
		"| Kafka CLI tools | 4.4.0 | Maven Central `org.apache.kafka:kafka-tools`",
		"| Feature | Java kafka-clients 4.4.0 |\n",
		"| Idempotent producer | pass |",
		"| Kafka CLI tools 4.4.0 | kafka-topics: create with configs, list, describe, refusals | pass |",
		"| Kafka CLI tools 4.4.0 | kafka-dump-log on a Sluice segment (.log, .index, .timeindex) | **fail** |",
		"| Kafka Streams | Streams word count: KTable, compacted changelog, restore after restart | skip |",
		"- fail kafka-tools/d: bad index",
		"| 0 | Produce | 0–12 |\n| 3 | Metadata | 0–12 |",
		"ListOffsets (2)",
		"Inter-broker and controller APIs, which a single node does not use: LeaderAndISR (4)",
		"**One node or a cluster.**",
		"- **Produce** (`internal/broker/produce.go`): no txns.",
		"### From `docs/compaction.md`\n\n- keys hashed",
		rubyCSharpNote,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "ListOffsets (2), LeaderAndISR") || strings.Contains(md, "Produce (0),") {
		t.Errorf("served or internal keys listed as not served:\n%s", md)
	}
}

func TestCompatCommandReadsTheRepository(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "internal", "broker", "fetch.go"),
		"// Fetch (key 1). Differences from Kafka: copies.\n\npackage broker\n")
	writeFile(t, filepath.Join(root, "docs", "x.md"), "## Differences from Kafka\n\n- x differs\n")
	rep := Report{GeneratedAt: "now", Results: []Result{{Client: "go", Test: "x", Feature: "produce", Status: statusPass}}}
	data, _ := json.Marshal(rep)
	in := filepath.Join(root, "results.json")
	writeFile(t, in, string(data))
	out := filepath.Join(root, "docs", "compatibility.md")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compat", "-in", in, "-out", out, "-root", root}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- **Fetch** (`internal/broker/fetch.go`): copies.", "- x differs", "not recorded in this results.json"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if code := run([]string{"compat", "-in", filepath.Join(root, "missing.json")}, &stdout, &stderr); code != 2 {
		t.Errorf("missing input: exit %d, want 2", code)
	}
}

func TestCollectRecordsAPIVersions(t *testing.T) {
	dir := t.TempDir()
	writeJSONL(t, dir, "a.jsonl", `{"client":"go","test":"x","status":"pass"}`)
	versions := filepath.Join(t.TempDir(), "v.json")
	writeFile(t, versions, `[{"key":18,"name":"ApiVersions","min":0,"max":4}]`)
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"collect", "-out", out, "-api-versions", versions, dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep Report
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.BrokerAPIVersions) != 1 || rep.BrokerAPIVersions[0] != (APIVersion{Key: 18, Name: "ApiVersions", Min: 0, Max: 4}) {
		t.Fatalf("versions %+v", rep.BrokerAPIVersions)
	}
	writeFile(t, versions, `not json`)
	if code := run([]string{"collect", "-out", out, "-api-versions", versions, dir}, &stdout, &stderr); code != 2 {
		t.Fatalf("bad versions file: exit %d, want 2", code)
	}
}
