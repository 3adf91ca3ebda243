package config

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestParseProperties(t *testing.T) {
	cases := []struct {
		name, text string
		want       map[string]string
	}{
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"space separator", "a b", map[string]string{"a": "b"}},
		{"spaces around equals", "  a  =  b c  ", map[string]string{"a": "b c  "}},
		{"tab and colon", "a\t:\tb", map[string]string{"a": "b"}},
		{"comments", "# c\n! c\n  # indented\na=1\n", map[string]string{"a": "1"}},
		{"blank lines", "\n\n   \na=1\n\n", map[string]string{"a": "1"}},
		{"key only", "flag\n", map[string]string{"flag": ""}},
		{"empty value", "a=\n", map[string]string{"a": ""}},
		{"second separator kept", "a==b", map[string]string{"a": "=b"}},
		{"colon in value", "listeners=PLAINTEXT://:9092", map[string]string{"listeners": "PLAINTEXT://:9092"}},
		{"continuation", "a=one,\\\n    two,\\\n\tthree\n", map[string]string{"a": "one,two,three"}},
		{"continuation then comment char", "a=x\\\n#notcomment\n", map[string]string{"a": "x#notcomment"}},
		{"even backslashes no continuation", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}},
		{"comment does not continue", "# c \\\nb=y", map[string]string{"b": "y"}},
		{"continuation at EOF", "a=x\\", map[string]string{"a": "x"}},
		{"escapes", `a=t\tn\nr\rf\f`, map[string]string{"a": "t\tn\nr\rf\f"}},
		{"unicode", `a=caf\u00e9 \u00E9`, map[string]string{"a": "café é"}},
		{"surrogate pair", `a=\uD83D\uDE00`, map[string]string{"a": "\U0001F600"}},
		{"escaped separators in key", `my\=key\:x\ y=v`, map[string]string{"my=key:x y": "v"}},
		{"other escapes", `a=\q\\`, map[string]string{"a": `q\`}},
		{"CRLF", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"CR only", "a=1\rb=2", map[string]string{"a": "1", "b": "2"}},
		{"duplicate last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"form feed leading", "\f a=1", map[string]string{"a": "1"}},
	}
	for _, c := range cases {
		got, err := ParseProperties(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, text := range []string{`a=\u12`, `a=\uZZZZ`, "ok=1\nb=\\u00g1"} {
		if _, err := ParseProperties(text); err == nil {
			t.Errorf("%q: want malformed \\u error", text)
		}
	}
}

// kafkaServerProperties is a KRaft server.properties in the shape Apache
// Kafka 4.x ships (written for this test).
const kafkaServerProperties = `
# Server basics
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093

# Socket server settings
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

# Log basics
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1

# Internal topic settings
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

# Log flush / retention
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`

func TestLoadKafkaStyleServerProperties(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(kafkaServerProperties), 0o600); err != nil {
		t.Fatal(err)
	}
	props, err := LoadBrokerFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if props["log.dirs"] != "/tmp/kraft-combined-logs" || props["node.id"] != "1" {
		t.Fatalf("parsed %v", props)
	}
	if _, ok := props["log.flush.interval.ms"]; ok {
		t.Fatal("commented-out line parsed")
	}
	b, err := NewBroker(props)
	if err != nil {
		t.Fatalf("Kafka's server.properties rejected: %v", err)
	}
	if b.NodeID != 1 || b.LogDirs[0] != "/tmp/kraft-combined-logs" || b.OffsetsTopicReplicationFactor != 1 {
		t.Fatalf("broker %+v", b)
	}
	if _, err := LoadBrokerFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file loaded")
	}
}
