package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseArgsPrecedence(t *testing.T) {
	var stderr bytes.Buffer
	s, sub, _, err := parseArgs([]string{"--listen", "127.0.0.1:1234", "--metrics-listen=:9100"},
		env(map[string]string{"SLUICE_LISTEN": "0.0.0.0:1", "SLUICE_DATA_DIR": "/env/dir", "SLUICE_ADVERTISE": "h:2", "SLUICE_CONFIG": "c.properties"}), &stderr)
	if err != nil || sub != "" {
		t.Fatal(err, sub)
	}
	if s.listen != "127.0.0.1:1234" || s.dataDir != "/env/dir" || s.advertise != "h:2" || s.configFile != "c.properties" || s.metricsListen != ":9100" {
		t.Fatalf("%+v", s)
	}
	s, _, _, _ = parseArgs(nil, env(nil), &stderr)
	if s.listen != "localhost:9092" || s.dataDir != "" || s.metricsListen != defaultMetricsListen {
		t.Fatalf("defaults %+v", s)
	}
	_, sub, rest, err := parseArgs([]string{"compaction", "status", "--x"}, env(nil), &stderr)
	if err != nil || sub != "compaction" || len(rest) != 2 {
		t.Fatalf("subcommand: %v %q %v", err, sub, rest)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.properties")
	os.WriteFile(badCfg, []byte("num.partitions=2\nno.such.setting=1\n"), 0o644)
	badVal := filepath.Join(dir, "badval.properties")
	os.WriteFile(badVal, []byte("num.partitions=lots\n"), 0o644)
	sslOnly := filepath.Join(dir, "ssl.properties")
	os.WriteFile(sslOnly, []byte("listeners=SSL://:9093\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--listen"}, "flag needs an argument"},
		{[]string{"--config", badCfg}, "no.such.setting"},
		{[]string{"--config", badVal}, "num.partitions"},
		{[]string{"--config", filepath.Join(dir, "missing")}, "missing"},
		{[]string{"--config", sslOnly}, "needs a key store"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--data-dir", dir, "extra"}, "unexpected argument"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, env(nil), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, stderr.String(), tc.want)
		}
	}
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, env(nil), &stdout, &bytes.Buffer{}); code != 0 || !strings.HasPrefix(stdout.String(), "sluice ") {
		t.Fatalf("--version: %d %q", code, stdout.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRunServesAndStopsCleanly starts the real command on a free port,
// produces a metadata round trip with kgo and stops it as SIGTERM would.
func TestRunServesAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.properties")
	// The address comes from Kafka's listeners setting, as in a server.properties.
	os.WriteFile(cfg, []byte("# test\nnum.partitions=2\noffsets.topic.num.partitions=1\nlisteners=PLAINTEXT://127.0.0.1:0\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuf{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", cfg},
			env(map[string]string{"SLUICE_DATA_DIR": filepath.Join(dir, "data")}), &bytes.Buffer{}, stderr)
	}()
	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line:\n%s", stderr)
		}
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(line, "sluice started") {
				i := strings.Index(line, "advertise=")
				addr = strings.Fields(line[i+len("advertise="):])[0]
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, want := range []string{"version=", "data_dir=", "cluster_id="} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("startup line lacks %s", want)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop")
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "meta.properties")); err != nil {
		t.Fatal(err)
	}
}
