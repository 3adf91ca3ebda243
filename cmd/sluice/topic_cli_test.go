package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// squeeze collapses runs of spaces (table padding) into one.
func squeeze(s string) string {
	return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ")
}

// mustCLI runs the binary and fails the test unless it exits 0 with every
// want in its output (compared with runs of spaces squeezed to one).
func mustCLI(t *testing.T, bin string, env []string, args []string, want ...string) string {
	t.Helper()
	out, code := runCLI(t, bin, env, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d:\n%s", args, code, out)
	}
	for _, w := range want {
		if !strings.Contains(squeeze(out), w) {
			t.Fatalf("%v: output lacks %q:\n%s", args, w, out)
		}
	}
	return out
}

// produceN writes n records with keys k0..k(n-1) to partition 0 of topic.
func produceN(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k" + string(rune('0'+i%10))), Value: []byte("value")}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBinaryTopicVerbs: every topic verb against the real broker.
func TestBinaryTopicVerbs(t *testing.T) {
	bin, addr, _ := startBinary(t)
	b := []string{"--bootstrap", addr}
	cli := func(args ...string) []string { return append(args, b...) }
	mustCLI(t, bin, nil, cli("topic", "create", "tv-a", "tv-b", "-p", "2", "-c", "cleanup.policy=compact"),
		"created topic tv-a (2 partitions)", "created topic tv-b (2 partitions)")
	out := mustCLI(t, bin, nil, cli("topic", "list"), "tv-a\t2 partitions", "tv-b\t2 partitions")
	if strings.Contains(out, "__consumer_offsets") {
		t.Errorf("list shows internal topics without --internal:\n%s", out)
	}
	// The offsets topic exists once a group committed.
	mustCLI(t, bin, nil, cli("group", "seek", "tv-g", "--topic", "tv-a", "--to", "start", "--execute"))
	mustCLI(t, bin, nil, cli("topic", "list", "--internal"), "__consumer_offsets\t")

	produceN(t, addr, "tv-a", 5)
	out = mustCLI(t, bin, nil, cli("topic", "describe", "tv-a"), "tv-a\ttopic id ", "cleanup.policy=compact DYNAMIC_TOPIC_CONFIG", "PARTITION LEADER")
	if strings.Contains(out, "DEFAULT_CONFIG") {
		t.Errorf("describe without --all shows defaults:\n%s", out)
	}
	// Partition 0: leader 1, replicas [1], in-sync [1], log start 0, end 5, a size > 0.
	if !regexp.MustCompile(`(?m)^  0 +1 +\d+ +\[1\] +\[1\] +0 +5 +[1-9]\d* +-$`).MatchString(out) {
		t.Errorf("partition 0 row wrong:\n%s", out)
	}
	mustCLI(t, bin, nil, cli("topic", "describe", "tv-a", "--all"), "retention.ms=604800000 DEFAULT_CONFIG")

	mustCLI(t, bin, nil, cli("topic", "alter-config", "tv-a", "--set", "retention.ms=1000", "--delete", "cleanup.policy"),
		"set retention.ms=1000 on topic tv-a", "deleted the override of cleanup.policy on topic tv-a")
	out = mustCLI(t, bin, nil, cli("topic", "describe", "tv-a"), "retention.ms=1000 DYNAMIC_TOPIC_CONFIG")
	if strings.Contains(out, "cleanup.policy") {
		t.Errorf("cleanup.policy override not deleted:\n%s", out)
	}
	if out, code := runCLI(t, bin, nil, cli("topic", "alter-config", "tv-a", "--set", "cleanup.policy=shred")...); code != 1 || !strings.Contains(out, `INVALID_CONFIG: invalid value "shred"`) {
		t.Errorf("bad alter: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, nil, cli("topic", "alter-config", "tv-a")...); code != 2 || !strings.Contains(out, "nothing to alter") {
		t.Errorf("empty alter: %d %q", code, out)
	}

	mustCLI(t, bin, nil, cli("topic", "add-partitions", "tv-a", "-n", "1"), "topic tv-a now has 3 partitions")
	mustCLI(t, bin, nil, cli("topic", "add-partitions", "tv-a", "--to", "5"), "topic tv-a now has 5 partitions")
	if out, code := runCLI(t, bin, nil, cli("topic", "add-partitions", "tv-a", "--to", "2")...); code != 1 || !strings.Contains(out, "INVALID_PARTITIONS") {
		t.Errorf("shrinking: %d %q", code, out)
	}

	mustCLI(t, bin, nil, cli("topic", "trim-prefix", "tv-a", "-o", "3", "-p", "0"), "tv-a\t0\tlog start offset 3")
	if !regexp.MustCompile(`(?m)^  0 +1 +\d+ +\[1\] +\[1\] +3 +5 `).MatchString(mustCLI(t, bin, nil, cli("topic", "describe", "tv-a"))) {
		t.Errorf("log start offset not 3 after trim-prefix")
	}
	mustCLI(t, bin, nil, cli("topic", "trim-prefix", "tv-a", "-o", "end"), "tv-a\t0\tlog start offset 5", "tv-a\t4\tlog start offset 0")
	// DeleteRecords answers with a code only: the command says what the
	// partition holds, and refuses a partition the topic lacks up front.
	if out, code := runCLI(t, bin, nil, cli("topic", "trim-prefix", "tv-a", "-o", "9", "-p", "0")...); code != 1 || !strings.Contains(out, "OFFSET_OUT_OF_RANGE") ||
		!strings.Contains(out, "(the partition holds offsets 5 to 5: -o takes an offset up to 5, or end)") {
		t.Errorf("trim past the end: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, nil, cli("topic", "trim-prefix", "tv-a", "-o", "0", "-p", "7")...); code != 1 || !strings.Contains(out, "partition 7: tv-a has 5 partition(s), 0 to 4") {
		t.Errorf("trim of a partition the topic lacks: %d %q", code, out)
	}
	mustCLI(t, bin, nil, cli("topic", "create", "tv-c", "-c", "cleanup.policy=compact"), "created topic tv-c")
	if out, code := runCLI(t, bin, nil, cli("topic", "trim-prefix", "tv-c", "-o", "0")...); code != 1 ||
		!strings.Contains(out, "partition 0: POLICY_VIOLATION: ") || !strings.Contains(out, "cleanup.policy includes delete") {
		t.Errorf("trim of a compacted topic: %d %q", code, out)
	}

	mustCLI(t, bin, nil, cli("topics", "delete", "tv-a", "tv-b"), "deleted topic tv-a", "deleted topic tv-b")
	if out, code := runCLI(t, bin, nil, cli("topic", "describe", "tv-a")...); code != 1 || !strings.Contains(out, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("describe deleted: %d %q", code, out)
	}
}
