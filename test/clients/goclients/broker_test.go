package goclients

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
)

// testBroker is one in-process Sluice server on 127.0.0.1:<free port>.
type testBroker struct {
	t       *testing.T
	cfg     *config.Broker
	dataDir string
	srv     *broker.Server
	addr    string
	logs    *logBuffer
}

// startBroker starts a broker for t and closes it when t ends. Broker logs
// are kept (warnings and up) and printed only if the test fails.
func startBroker(t *testing.T) *testBroker {
	t.Helper()
	cfg, err := config.NewBroker(map[string]string{
		"offsets.topic.num.partitions": "1",
		// A single consumer joins; waiting 3 s for more only slows tests.
		"group.initial.rebalance.delay.ms": "0",
		// KIP-848 consumers hand back their assignment on the next
		// heartbeat; Kafka's 5 s interval would dominate the tests.
		"group.consumer.heartbeat.interval.ms":     "500",
		"group.consumer.min.heartbeat.interval.ms": "500",
		// The compaction tests wait for the cleaner; idle it briefly.
		"log.cleaner.backoff.ms": "50",
	})
	if err != nil {
		t.Fatalf("broker config: %v", err)
	}
	tb := &testBroker{t: t, cfg: cfg, dataDir: t.TempDir(), logs: &logBuffer{}}
	if err := tb.start("127.0.0.1:0"); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	tb.addr = tb.srv.Addr().String()
	t.Cleanup(func() {
		tb.stop()
		if t.Failed() {
			t.Logf("broker log (warn+):\n%s", tb.logs.String())
		}
	})
	return tb
}

func (tb *testBroker) start(listen string) error {
	srv := broker.NewServer(broker.Options{
		Listen:          listen,
		DataDir:         tb.dataDir,
		Config:          tb.cfg,
		Logger:          slog.New(slog.NewTextHandler(tb.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Version:         "goclients-test",
		ShutdownTimeout: 5 * time.Second,
	})
	if err := srv.Start(); err != nil {
		return err
	}
	tb.srv = srv
	return nil
}

func (tb *testBroker) stop() {
	if tb.srv == nil {
		return
	}
	if err := tb.srv.Close(); err != nil {
		tb.t.Errorf("close broker: %v", err)
	}
	tb.srv = nil
}

// restart stops the broker and starts it again on the same data directory
// and the same address, so that connected clients reconnect by themselves.
func (tb *testBroker) restart(t *testing.T) {
	t.Helper()
	tb.stop()
	waitFor(t, 10*time.Second, "broker restart on "+tb.addr, func() error {
		return tb.start(tb.addr)
	})
}

// logBuffer collects broker log lines for failed tests.
type logBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sb.Len() < 1<<20 {
		l.sb.Write(p)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.String()
}

var _ io.Writer = (*logBuffer)(nil)

var nameSeq atomic.Int64

// uniqueName returns a topic or group name unique within the test binary.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, nameSeq.Add(1))
}

// waitFor polls cond until it returns nil or the deadline passes, then fails
// with the last error.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := 10 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		time.Sleep(delay)
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

// record is a client-neutral view of a consumed record.
type record struct {
	partition int32
	offset    int64
	key       string
	value     []byte // nil for a tombstone
}

// keyedRecords is the data every client writes to its compacted topic:
// three keys, one overwritten, then a tombstone for "k2".
func keyedRecords() []record {
	return []record{
		{key: "k1", value: []byte("v1")},
		{key: "k2", value: []byte("v2")},
		{key: "k3", value: []byte("v3")},
		{key: "k1", value: []byte("v1b")},
		{key: "k2", value: nil},
	}
}

// checkKeyed compares consumed records (one partition, in order) with what
// keyedRecords wrote.
func checkKeyed(t *testing.T, got []record) {
	t.Helper()
	want := keyedRecords()
	if len(got) != len(want) {
		t.Fatalf("consumed %d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.offset != int64(i) {
			t.Errorf("record %d: offset %d, want %d", i, g.offset, i)
		}
		if g.key != w.key {
			t.Errorf("record %d: key %q, want %q", i, g.key, w.key)
		}
		if w.value == nil {
			if g.value != nil {
				t.Errorf("record %d: want a tombstone (nil value), got %q", i, g.value)
			}
		} else if string(g.value) != string(w.value) {
			t.Errorf("record %d: value %q, want %q", i, g.value, w.value)
		}
	}
}

// compactingTopicConfigs make a topic that the cleaner compacts within
// moments: the active segment rolls after 100 ms, any dirt is worth a pass,
// and tombstones may go on the pass after the one that first keeps them.
var compactingTopicConfigs = map[string]string{
	"cleanup.policy":            "compact",
	"segment.ms":                "100",
	"min.cleanable.dirty.ratio": "0.01",
	"min.compaction.lag.ms":     "0",
	"delete.retention.ms":       "0",
}

// compactionRecords are keyedRecords plus a sentinel that always survives,
// so that a reader knows when it has reached the end.
func compactionRecords() []record {
	return append(keyedRecords(), record{key: "end", value: []byte("end")})
}

// compactedView is what compactionRecords must become once cleaned: the
// latest value of each key at its original offset, the tombstone gone.
const compactedView = "[2:k3=v3 3:k1=v1b 5:end=end]"

// formatRecords renders records as offset:key=value (value <nil> for a
// tombstone), for comparison with compactedView.
func formatRecords(rs []record) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		v := "<nil>"
		if r.value != nil {
			v = string(r.value)
		}
		parts[i] = fmt.Sprintf("%d:%s=%s", r.offset, r.key, v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// waitCompacted re-reads the topic from its first offset up to the sentinel
// (readToEnd) until the cleaner has left only compactedView.
func waitCompacted(t *testing.T, readToEnd func() []record) {
	t.Helper()
	waitFor(t, 20*time.Second, "compaction", func() error {
		if got := formatRecords(readToEnd()); got != compactedView {
			return fmt.Errorf("read %s, want %s", got, compactedView)
		}
		return nil
	})
}
