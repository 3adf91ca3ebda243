package broker

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func httpGet(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestHealthEndpoints: /healthz answers while the process is up, /readyz
// once the logs are loaded and the listeners serve (and no longer while
// shutting down); every answer names the cluster and node.
func TestHealthEndpoints(t *testing.T) {
	tb := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0"})
	base := "http://" + tb.srv.MetricsAddr().String()
	code, body, hdr := httpGet(t, base+"/healthz")
	if code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if hdr.Get(HeaderClusterID) != tb.broker().clusterID || hdr.Get(HeaderNodeID) != strconv.Itoa(int(tb.broker().nodeID)) {
		t.Errorf("identity headers %v, want cluster %s node %d", hdr, tb.broker().clusterID, tb.broker().nodeID)
	}
	if code, body, _ = httpGet(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	if code, _, hdr = httpGet(t, base+"/compaction/status"); code != 200 || hdr.Get(HeaderClusterID) == "" {
		t.Errorf("/compaction/status: %d %v", code, hdr)
	}
	// DescribeConfigs reports the bound address as sluice.metrics.listen.
	rcs, err := tb.admin().DescribeBrokerConfigs(ctx(t), tb.broker().nodeID)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "sluice.metrics.listen" {
				found = c.MaybeValue() == tb.srv.MetricsAddr().String() && c.Source == kmsg.ConfigSourceStaticBrokerConfig
			}
		}
	}
	if !found {
		t.Errorf("sluice.metrics.listen is not reported as %s: %+v", tb.srv.MetricsAddr(), rcs)
	}
	tb.srv.health.set(false, "shutting down")
	if code, body, _ = httpGet(t, base+"/readyz"); code != 503 || body != "not ready: shutting down\n" {
		t.Errorf("/readyz not ready: %d %q", code, body)
	}
	if code, _, _ = httpGet(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz while not ready: %d", code)
	}
}

// TestMetricsListenTaken: an explicitly given metrics address that is taken
// fails the start before the data directory is created; the default one
// (MetricsOptional) only warns.
func TestMetricsListenTaken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "data")
	srv := NewServer(Options{Listen: "127.0.0.1:0", DataDir: dir, MetricsListen: busy.Addr().String(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err = srv.Start()
	if err == nil {
		srv.Close()
		t.Fatal("started with a taken metrics address")
	}
	if !strings.Contains(err.Error(), "metrics listener: listen tcp "+busy.Addr().String()) {
		t.Errorf("error %q does not name the address", err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("the data directory was created: %v", serr)
	}

	logs := &lockedBuf{}
	srv = NewServer(Options{Listen: "127.0.0.1:0", DataDir: dir, MetricsListen: busy.Addr().String(), MetricsOptional: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.MetricsAddr() != nil || !strings.Contains(logs.String(), "metrics endpoint not started") {
		t.Errorf("optional taken address: %v\n%s", srv.MetricsAddr(), logs.String())
	}
}

// lockedBuf is a log destination safe to read while the broker writes.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
