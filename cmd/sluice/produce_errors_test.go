package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBinaryProduceErrorsShowBrokerMessage: a rejected produce prints the
// broker's own message (why, and which topic partition), not only the
// generic text of the error code, which is all the producer library reports.
func TestBinaryProduceErrorsShowBrokerMessage(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "pe-compacted", "-c", "cleanup.policy=compact"}, "created topic pe-compacted")
	mustCLI(t, bin, env, []string{"topic", "create", "pe-small", "-c", "max.message.bytes=200", "-c", "message.timestamp.after.max.ms=60000"}, "created topic pe-small")
	random := make([]byte, 600)
	rand.Read(random)
	for _, c := range []struct {
		input string
		args  []string
		want  string
	}{
		{"no-key\n", []string{"pe-compacted", "-p", "0"},
			"sluice produce: INVALID_RECORD: compacted topic cannot accept records without a key in topic partition pe-compacted-0 (record 0 of the batch)\n"},
		{hex.EncodeToString(random) + "\n", []string{"pe-small"},
			"sluice produce: MESSAGE_TOO_LARGE: batch larger than max.message.bytes in topic partition pe-small-0\n"},
		{strconv.FormatInt(time.Now().Add(24*time.Hour).UnixMilli(), 10) + "|v\n", []string{"pe-small", "-f", `%T|%v\n`},
			"sluice produce: INVALID_TIMESTAMP: record timestamp later than message.timestamp.after.max.ms allows in topic partition pe-small-0\n"},
		// Beyond what the client can encode: refused before sending.
		{"9999999999999|v\n", []string{"pe-small", "-f", `%T|%v\n`},
			"sluice produce: record 1: timestamp 9999999999999 out of range"},
	} {
		out, code := runCLIInput(t, bin, env, c.input, append([]string{"produce"}, c.args...)...)
		if code != 1 || !strings.Contains(out, c.want) || strings.Contains(out, "has failed the validation") {
			t.Errorf("produce %v: exit %d, %q; want exit 1 and %q", c.args, code, out, c.want)
		}
	}
	// A topic that does not exist is created on first use, as by Kafka's
	// producer, when the broker allows it (its default)...
	mustCLI(t, bin, env, []string{"produce", "pe-auto", "-q"}) // no input: no record, but the topic
	mustCLI(t, bin, env, []string{"topic", "list"}, "pe-auto\t")
	// ...and reported at once, with the reason, when it does not.
	cfg := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(cfg, []byte("auto.create.topics.enable=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, noAuto, _ := startBinary(t, "--config", cfg)
	out, code := runCLIInput(t, bin, []string{"SLUICE_BOOTSTRAP=" + noAuto}, "v\n", "produce", "pe-missing", "--timeout", "60s")
	if want := "sluice produce: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition. (topic pe-missing does not exist and the broker does not create topics on first use: auto.create.topics.enable=false"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("produce to a missing topic: exit %d %q; want %q", code, out, want)
	}

	// Nothing was written.
	for _, topic := range []string{"pe-compacted", "pe-small"} {
		if out := mustCLI(t, bin, env, []string{"consume", topic, "-f", `%o\n`}); out != "" {
			t.Errorf("%s holds records after rejected produces: %q", topic, out)
		}
	}
}
