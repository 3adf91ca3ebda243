package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBinaryCompactionStatusChecksIdentity: "sluice compaction status"
// reports on the broker at --bootstrap, and refuses a metrics listener that
// belongs to another broker (here a second one, as when another process owns
// the default port).
func TestBinaryCompactionStatusChecksIdentity(t *testing.T) {
	bin, addrA, startA := startBinary(t, "--metrics-listen", "127.0.0.1:0")
	_, _, startB := startBinary(t, "--metrics-listen", "127.0.0.1:0")
	metrics := regexp.MustCompile(`metrics=(\S+)`)
	cluster := regexp.MustCompile(`cluster_id=(\S+)`)
	mA, mB := metrics.FindStringSubmatch(startA), metrics.FindStringSubmatch(startB)
	idA, idB := cluster.FindStringSubmatch(startA), cluster.FindStringSubmatch(startB)
	if mA == nil || mB == nil || idA == nil || idB == nil || idA[1] == idB[1] {
		t.Fatalf("startup lines:\n%s\n%s", startA, startB)
	}
	mustCLI(t, bin, nil, []string{"topic", "create", "profiles", "-c", "cleanup.policy=compact", "--bootstrap", addrA})

	out := mustCLI(t, bin, nil, []string{"compaction", "status", "--bootstrap", addrA, "--metrics-addr", mA[1]},
		"node 1 of cluster "+idA[1], "status from "+mA[1], "profiles 0 ")
	if strings.Contains(out, "__consumer_offsets ") {
		t.Errorf("internal topics shown:\n%s", out)
	}
	mustCLI(t, bin, nil, []string{"compaction", "status", "profiles", "--json", "--bootstrap", addrA, "--metrics-addr", mA[1]}, `"topic": "profiles"`)
	mustCLI(t, bin, []string{"SLUICE_METRICS_LISTEN=" + mA[1], "SLUICE_BOOTSTRAP=" + addrA}, []string{"compaction", "status", "profiles"}, "profiles 0 ")
	// Without an address: the one the broker reports as sluice.metrics.listen.
	mustCLI(t, bin, []string{"SLUICE_METRICS_LISTEN="}, []string{"compaction", "status", "--bootstrap", addrA}, "status from "+mA[1], "profiles 0 ")
	_, addrC, _ := startBinary(t) // with --metrics-listen ""
	if out, code := runCLI(t, bin, []string{"SLUICE_METRICS_LISTEN="}, "compaction", "status", "--bootstrap", addrC); code != 1 || !strings.Contains(out, "has no metrics listener") {
		t.Errorf("broker without a metrics listener: %d %q", code, out)
	}

	// B's listener is refused, by flag or by variable.
	for _, env := range [][]string{nil, {"SLUICE_METRICS_LISTEN=" + mB[1]}} {
		args := []string{"compaction", "status", "--bootstrap", addrA}
		if env == nil {
			args = append(args, "--metrics-addr", mB[1])
		}
		out, code := runCLI(t, bin, env, args...)
		if code != 1 || !strings.Contains(out, mB[1]+" belongs to node 1 of cluster "+idB[1]+", another broker") || strings.Contains(out, "TOPIC") {
			t.Errorf("%v %v: exit %d\n%s", env, args, code, out)
		}
	}
	if out, code := runCLI(t, bin, nil, "compaction", "status", "nope", "--bootstrap", addrA, "--metrics-addr", mA[1]); code != 1 || !strings.Contains(out, `has no compacted topic "nope"`) {
		t.Errorf("unknown topic: %d %q", code, out)
	}
	if out, code := runCLI(t, bin, nil, "compaction", "status", "--bootstrap", addrA, "--metrics-addr", "127.0.0.1:1"); code != 1 || !strings.Contains(out, "cannot reach 127.0.0.1:1") {
		t.Errorf("unreachable: %d %q", code, out)
	}
}

// TestBinaryHealthAndLogging: /healthz and /readyz answer on the metrics
// listener; --log-format json (or sluice.log.format) makes JSON log lines,
// and a flag wins over the config file.
func TestBinaryHealthAndLogging(t *testing.T) {
	_, _, start := startBinary(t, "--metrics-listen", "127.0.0.1:0", "--log-format", "json")
	if !strings.HasPrefix(start, "{") || !strings.Contains(start, `"msg":"sluice started"`) {
		t.Fatalf("startup line is not JSON: %s", start)
	}
	m := regexp.MustCompile(`"metrics":"([^"]+)"`).FindStringSubmatch(start)
	if m == nil {
		t.Fatalf("no metrics address: %s", start)
	}
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		code, body := httpGetString(t, "http://"+m[1]+path)
		if code != 200 || body != want {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
}

func httpGetString(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBinaryMetricsListenTaken: an explicit --metrics-listen that cannot be
// bound stops the broker (exit 1) before it creates its data directory.
func TestBinaryMetricsListenTaken(t *testing.T) {
	bin := sluiceBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "data")
	out, code := runCLI(t, bin, nil, "--listen", freeAddr(t), "--data-dir", dir, "--metrics-listen", busy.Addr().String())
	if code != 1 || !strings.Contains(out, "metrics listener: listen tcp "+busy.Addr().String()) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory created: %v", err)
	}
	// The same from the config file's sluice.metrics.listen.
	cfg := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(cfg, []byte("sluice.metrics.listen="+busy.Addr().String()+"\n"), 0o600)
	out, code = runCLI(t, bin, []string{"SLUICE_METRICS_LISTEN="}, "--listen", freeAddr(t), "--data-dir", dir, "--config", cfg)
	if code != 1 || !strings.Contains(out, "metrics listener: listen tcp "+busy.Addr().String()) {
		t.Errorf("sluice.metrics.listen taken: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory created: %v", err)
	}
}
