package console

// The console in a real browser: headless Chromium (Debian's chromium
// package) loads each page of a console over a broker with the seeded
// dataset; every page must render the values the dataset implies and log
// nothing to the browser console (no script error, no refused resource, no
// Content-Security-Policy violation).
//
// With SLUICE_CONSOLE_SCREENSHOTS=DIR it also writes a PNG of each page to
// DIR (docs/img holds the ones docs/console.md shows).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func chromiumPath() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs a headless Chromium with args and url; it returns
// standard output and the browser console's messages.
func runChromium(t *testing.T, bin string, args ...string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // any helper process left
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	var console []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return stdout.String(), console
}

func TestConsoleInChromium(t *testing.T) {
	bin := chromiumPath()
	if bin == "" && os.Getenv("SLUICE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is not installed and SLUICE_REQUIRE_CHROMIUM is set (scripts/test-all.sh installs it with apt-get install -y chromium)")
	}
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; scripts/test-all.sh installs it): the headless-browser test of the web console is skipped")
	}
	// With the authorizer on (the console's anonymous client is a super
	// user), so that the ACLs page has ACLs to show.
	srv := startBroker(t, authzProps, nil)
	addr := srv.Addr().String()
	cl, adm := adminOf(t, addr)
	seed(t, cl, adm)
	acl := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe).Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(context.Background(), acl); err != nil || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %v", err, res)
	}
	m, err := adm.BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Listen: "127.0.0.1:0", Bootstrap: []string{addr}, LagInterval: 200 * time.Millisecond, Logger: quiet,
		Traffic: &Traffic{Totals: srv.TopicTotals, NodeID: srv.NodeID(), Clustered: srv.Clustered}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	base := "http://" + c.Addr().String()
	// A second console that may write: its users and ACLs pages have forms.
	cw, err := New(Options{Listen: "127.0.0.1:0", Bootstrap: []string{addr}, AllowWrites: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cw.Close() })
	writable := "http://" + cw.Addr().String()
	waitFor(t, "two lag samples of billing", 30*time.Second, func() bool { return len(c.anon.lag.points("billing")) >= 2 })
	// More records on orders/0: the lag rises, and the chart shows it.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if err := pcl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprintf("late-%d", i)), Value: []byte(`{}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pcl.Close()
	const lag = billingLag + 6
	waitFor(t, "a lag sample after the new records", 30*time.Second, func() bool {
		pts := c.anon.lag.points("billing")
		return len(pts) > 0 && pts[len(pts)-1].total == lag
	})
	// The broker's counters: 30 seeded records and 6 more on orders.
	waitFor(t, "a traffic sample after the new records", 30*time.Second, func() bool {
		return c.trafficHist.of("orders").Totals.MessagesIn == 3*ordersPerPartition+6
	})

	shots := os.Getenv("SLUICE_CONSOLE_SCREENSHOTS")
	pages := []struct {
		name, path string
		wants      []string
		base       string // default: the read-only console
	}{
		{"overview", "/", []string{`id="cluster-id">` + m.Cluster + `<`, `id="topics">2<`, `id="offline">0<`, `id="under-replicated">0<`, `id="groups">1<`}, ""},
		{"topics", "/topics", []string{`data-topic="orders"`, `<td class="num">36</td>`, `data-topic="profiles"`, `class="num msgs-in"`, `class="num bytes-out">0 B/s<`, `id="traffic-note"`}, ""},
		{"topic", "/topics/orders", []string{`<td class="num start">0</td><td class="num end">16</td>`, `<td class="num start">0</td><td class="num end">10</td>`, `data-partition="2"`,
			`id="traffic-table"`, fmt.Sprintf(`<td class="num total">%d</td>`, 3*ordersPerPartition+6)}, ""},
		{"messages", "/topics/orders/messages?partition=1&from=offset&offset=5&format=json&limit=5", []string{`data-offset="5"`, `data-offset="9"`, "order-1-7", "source=web", `"amount": 80`}, ""},
		{"compaction", "/topics/profiles/compaction?key=user-1", []string{`id="compaction-table"`, `data-offset="2"`, `"plan": "pro"`}, ""},
		{"tombstone", "/topics/profiles/compaction?key=user-2", []string{`data-offset="3"`, "tombstone (deleted)"}, ""},
		{"groups", "/groups", []string{`data-group="billing"`, fmt.Sprintf(`<td class="num lag">%d</td>`, lag)}, ""},
		{"group", "/groups/billing", []string{`id="lag-chart"`, "<polyline", fmt.Sprintf(`id="total-lag">%d<`, lag), `<td class="num lag">12</td>`, fmt.Sprintf("total (%d)", lag)}, ""},
		{"users", "/users", []string{`data-user="alice"`, "SCRAM-SHA-256 (4096 iterations)"}, ""},
		{"acls", "/acls", []string{`data-acl="TOPIC:orders:User:alice:READ"`, `data-acl="TOPIC:orders:User:alice:DESCRIBE"`, "<td>LITERAL</td>", "<td>ALLOW</td>"}, ""},
		{"users-write", "/users", []string{`id="create-user"`, `name="mechanism" value="SCRAM-SHA-256"`, "Delete…"}, writable},
		{"acls-write", "/acls", []string{`id="create-acl"`, "<option>TRANSACTIONAL_ID</option>", "Delete…"}, writable},
	}
	for _, pg := range pages {
		if pg.base == "" {
			pg.base = base
		}
		dom, console := runChromium(t, bin, "--dump-dom", pg.base+pg.path)
		for _, w := range pg.wants {
			if !strings.Contains(dom, w) {
				t.Errorf("%s (%s): the rendered page lacks %q", pg.name, pg.path, w)
			}
		}
		if len(console) > 0 {
			t.Errorf("%s (%s): browser console messages:\n%s", pg.name, pg.path, strings.Join(console, "\n"))
		}
		if t.Failed() {
			t.Fatalf("%s DOM:\n%s", pg.name, dom)
		}
		// The users and ACLs screenshots are of the console that may write.
		if shots != "" && pg.name != "tombstone" && pg.name != "users" && pg.name != "acls" {
			out := filepath.Join(shots, "console-"+strings.TrimSuffix(pg.name, "-write")+".png")
			runChromium(t, bin, "--hide-scrollbars", "--window-size=1100,680", "--screenshot="+out, pg.base+pg.path)
			if _, err := os.Stat(out); err != nil {
				t.Fatalf("screenshot %s: %v", out, err)
			}
		}
	}
}
