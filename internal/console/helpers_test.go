package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security"
)

var quiet = slog.New(slog.DiscardHandler)

// startBroker runs an in-process broker with a metrics listener (for the
// compaction view) and the given configs and listeners.
func startBroker(t *testing.T, props map[string]string, listeners []security.Listener) *broker.Server {
	t.Helper()
	cfg := config.DefaultBroker()
	if props != nil {
		var err error
		if cfg, err = config.NewBroker(props); err != nil {
			t.Fatal(err)
		}
	}
	opts := broker.Options{DataDir: t.TempDir(), MetricsListen: "127.0.0.1:0", Config: cfg, Logger: quiet, Listeners: listeners,
		ShutdownTimeout: 5 * time.Second}
	if listeners == nil {
		opts.Listen = "127.0.0.1:0"
	}
	srv := broker.NewServer(opts)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func adminOf(t *testing.T, addr string, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// The seeded dataset, and what the pages must show for it.
const (
	ordersPerPartition = 10
	billingLag         = 16 // orders: committed 4, 10, 0 of 10 each
)

// seed creates:
//   - orders: 3 partitions of 10 JSON records each (key order-<p>-<i>,
//     header source=web);
//   - profiles (compacted): user-1 v1, user-2 v1, user-1 v2, user-2 tombstone;
//   - group billing with committed offsets 4, 10, 0 on orders;
//   - SCRAM user alice.
func seed(t *testing.T, cl *kgo.Client, adm *kadm.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "profiles"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < ordersPerPartition; i++ {
			v, _ := json.Marshal(map[string]any{"order": i, "partition": p, "amount": 10 * (i + 1)})
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Key: []byte(fmt.Sprintf("order-%d-%d", p, i)), Value: v,
				Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("web")}}})
		}
	}
	recs = append(recs,
		&kgo.Record{Topic: "profiles", Key: []byte("user-1"), Value: []byte(`{"name":"Ada","plan":"free"}`)},
		&kgo.Record{Topic: "profiles", Key: []byte("user-2"), Value: []byte(`{"name":"Bob"}`)},
		&kgo.Record{Topic: "profiles", Key: []byte("user-1"), Value: []byte(`{"name":"Ada","plan":"pro"}`)},
		&kgo.Record{Topic: "profiles", Key: []byte("user-2"), Value: nil},
	)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	for _, r := range recs {
		if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	os := make(kadm.Offsets)
	for p, at := range []int64{4, 10, 0} {
		os.Add(kadm.Offset{Topic: "orders", Partition: int32(p), At: at, LeaderEpoch: -1})
	}
	if rs, err := adm.CommitOffsets(ctx, "billing", os); err != nil || rs.Error() != nil {
		t.Fatalf("commit: %v %v", err, rs.Error())
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Password: "alice-pw"}}); err != nil {
		t.Fatal(err)
	}
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, speaking to one console.
type browser struct {
	t    *testing.T
	base string
	cl   *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, cl: &http.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.cl.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.base+path, nil)
	return b.do(req)
}

// post sends a form as the console's own page would (Origin set).
func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	return b.postWith(path, form, map[string]string{"Origin": b.base})
}

func (b *browser) postWith(path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return b.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf loads path and returns the CSRF token of its forms.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	_, body := b.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token on %s:\n%s", path, body)
	}
	return m[1]
}

func newTestConsole(t *testing.T, opts Options) (*Console, *httptest.Server) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(c.Handler())
	t.Cleanup(func() { hs.Close(); c.Close() })
	return c, hs
}

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", what, w)
		}
	}
	if t.Failed() {
		t.Logf("%s body:\n%s", what, body)
		t.FailNow()
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
