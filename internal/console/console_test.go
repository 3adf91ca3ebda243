package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice-broker/sluice/internal/security"
)

// seeded is a plaintext broker with the seeded dataset.
func seeded(t *testing.T) (addr string, adm *kadm.Client) {
	srv := startBroker(t, nil, nil)
	addr = srv.Addr().String()
	cl, adm := adminOf(t, addr)
	seed(t, cl, adm)
	return addr, adm
}

func TestPagesShowTheSeededDataset(t *testing.T) {
	addr, adm := seeded(t)
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, LagInterval: 100 * time.Millisecond})
	b := newBrowser(t, hs.URL)
	ctx := context.Background()
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}

	resp, body := b.get("/")
	if resp.StatusCode != 200 {
		t.Fatalf("overview: %d\n%s", resp.StatusCode, body)
	}
	mustContain(t, "overview", body, `id="cluster-id">`+m.Cluster+`<`, `id="controller">1<`, `id="topics">2<`,
		`id="partitions">`, `id="offline">0<`, `id="under-replicated">0<`, `id="groups">1<`, `read-only`)

	_, body = b.get("/topics")
	mustContain(t, "topics", body, `data-topic="orders"`, `<td class="num">30</td>`, `data-topic="profiles"`, "Records/s")
	if strings.Contains(body, "__consumer_offsets") {
		t.Errorf("topics lists internal topics by default")
	}
	_, body = b.get("/topics?internal=1")
	mustContain(t, "topics with internal", body, "__consumer_offsets")

	_, body = b.get("/topics/orders")
	for p := 0; p < 3; p++ {
		if !regexp.MustCompile(fmt.Sprintf(`data-partition="%d"><td class="num">%d</td><td class="num">1</td><td>1</td><td>1</td><td class="num start">0</td><td class="num end">%d</td>`, p, p, ordersPerPartition)).MatchString(body) {
			t.Fatalf("topic page: partition %d row wrong:\n%s", p, body)
		}
	}
	mustContain(t, "topic overrides", body, "No overrides")
	if regexp.MustCompile(`<td class="num">-</td>`).MatchString(body) || strings.Contains(body, "size 0 B") {
		t.Fatalf("topic page without sizes:\n%s", body)
	}
	_, body = b.get("/topics/profiles")
	mustContain(t, "compacted topic", body, `data-config="cleanup.policy"`, `<td class="val">compact</td><td>DYNAMIC_TOPIC</td>`, `id="compaction-link"`)
	_, body = b.get("/topics/orders?configs=all")
	mustContain(t, "all configs", body, `data-config="retention.ms"`, `DEFAULT`)

	resp, body = b.get("/topics/nope")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `class="error"`) {
		t.Fatalf("unknown topic: %d\n%s", resp.StatusCode, body)
	}

	// Messages: from an offset, JSON, hex, a key filter, a timestamp.
	_, body = b.get("/topics/orders/messages?partition=1&from=offset&offset=7&format=json")
	mustContain(t, "messages from offset", body, `data-offset="7"`, `data-offset="9"`, "order-1-8", `&#34;amount&#34;: 90`, "source=web", "3 records shown")
	if strings.Contains(body, `data-offset="6"`) {
		t.Errorf("messages from offset 7 show offset 6")
	}
	_, body = b.get("/topics/orders/messages?partition=0&from=offset&offset=0&limit=1&format=hex")
	mustContain(t, "hex", body, fmt.Sprintf("%x", `{"amount":10`))
	_, body = b.get("/topics/orders/messages?key=order-2-3")
	mustContain(t, "key filter", body, "1 records shown", "order-2-3")
	_, body = b.get("/topics/orders/messages?from=time&time=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	mustContain(t, "future timestamp", body, "0 records shown")
	_, body = b.get("/topics/orders/messages?from=time&time=0&partition=2&limit=2")
	mustContain(t, "timestamp 0", body, "2 records shown", "order-2-0", "order-2-1")
	for _, q := range []string{"offset=-3", "offset=x", "partition=7", "partition=x", "from=time&time=yesterday", "limit=0", "limit=100000"} {
		resp, body = b.get("/topics/orders/messages?" + q)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="error"`) {
			t.Errorf("messages?%s: %d, want 400 with the reason", q, resp.StatusCode)
		}
	}
	_, body = b.get("/topics/profiles/messages")
	mustContain(t, "tombstone in browser", body, "null (tombstone)")

	// Compaction view and latest value by key.
	_, body = b.get("/topics/profiles/compaction?key=user-1")
	mustContain(t, "latest user-1", body, `id="compaction-table"`, `data-partition="0"`, `data-offset="2"`, `&#34;plan&#34;: &#34;pro&#34;`,
		`<div class="roll">rolls 20`, ` (segment.ms)</div>`) // the active segment's roll time

	if strings.Contains(body, "Problems") || strings.Contains(body, `class="warn">node`) {
		t.Fatalf("compaction status not found:\n%s", body)
	}
	_, body = b.get("/topics/profiles/compaction?key=user-2")
	mustContain(t, "latest user-2", body, `data-offset="3"`, "tombstone (deleted)")
	_, body = b.get("/topics/profiles/compaction?key=user-9")
	mustContain(t, "latest user-9", body, `id="latest-none"`)

	// Groups and lag.
	_, body = b.get("/groups")
	mustContain(t, "groups", body, `data-group="billing"`, fmt.Sprintf(`<td class="num lag">%d</td>`, billingLag))
	waitFor(t, "a lag sample", 30*time.Second, func() bool {
		_, body = b.get("/groups/billing")
		return strings.Contains(body, `id="lag-chart"`)
	})
	mustContain(t, "group", body, fmt.Sprintf(`id="total-lag">%d<`, billingLag), `data-tp="orders/0"`,
		`<td class="num">4</td><td class="num">10</td><td class="num lag">6</td>`, "<polyline", fmt.Sprintf("total (%d)", billingLag))

	_, body = b.get("/users")
	mustContain(t, "users", body, `data-user="alice"`, "SCRAM-SHA-256 (")
}

// sessionToken is the CSRF token of b's session, read from the console
// (pages without forms do not show it).
func sessionToken(t *testing.T, c *Console, b *browser) string {
	t.Helper()
	b.get("/")
	u, _ := url.Parse(b.base)
	for _, ck := range b.cl.Jar.Cookies(u) {
		if ck.Name == cookieName {
			c.mu.Lock()
			defer c.mu.Unlock()
			if s := c.sessions[ck.Value]; s != nil {
				return s.csrf
			}
		}
	}
	t.Fatal("no session")
	return ""
}

func TestReadOnlyWithoutLogin(t *testing.T) {
	addr, adm := seeded(t)
	c, hs := newTestConsole(t, Options{Bootstrap: []string{addr}})
	b := newBrowser(t, hs.URL)
	_, body := b.get("/topics")
	if strings.Contains(body, `id="create-topic"`) {
		t.Fatal("read-only console shows the create form")
	}
	_, body = b.get("/groups/billing")
	if strings.Contains(body, `id="reset-offsets"`) {
		t.Fatal("read-only console shows the reset form")
	}
	tok := sessionToken(t, c, b)
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/topics", url.Values{"name": {"sneaky"}, "confirm": {"yes"}}},
		{"/topics/orders/config", url.Values{"key": {"retention.ms"}, "value": {"1"}, "confirm": {"yes"}}},
		{"/topics/orders/delete-records", url.Values{"partition": {"0"}, "before": {"5"}, "confirm": {"yes"}}},
		{"/groups/billing/reset", url.Values{"to": {"end"}, "confirm": {"yes"}}},
	} {
		tc.form.Set("csrf", tok)
		resp, body := b.post(tc.path, tc.form)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Fatalf("POST %s: %d, want 403 read-only\n%s", tc.path, resp.StatusCode, body)
		}
	}
	ctx := context.Background()
	if topicExists(t, addr, "sneaky") {
		t.Fatal("read-only console created a topic")
	}
	so, _ := adm.ListStartOffsets(ctx, "orders")
	if o, _ := so.Lookup("orders", 0); o.Offset != 0 {
		t.Fatalf("read-only console deleted records: start %d", o.Offset)
	}
}

func TestCSRFOriginAndConfirmation(t *testing.T) {
	addr, adm := seeded(t)
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, AllowWrites: true})
	b := newBrowser(t, hs.URL)
	ctx := context.Background()
	tok := b.csrf("/topics")
	form := func(extra ...string) url.Values {
		v := url.Values{"name": {"made-here"}, "partitions": {"2"}, "configs": {"retention.ms=60000"}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return v
	}
	exists := func() bool { return topicExists(t, addr, "made-here") }
	// Refused: no token, a wrong token, a foreign Origin, a foreign
	// Referer without Origin, neither, a cross-site fetch.
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", form("confirm", "yes"), map[string]string{"Origin": hs.URL}},
		{"wrong token", form("confirm", "yes", "csrf", strings.Repeat("0", 64)), map[string]string{"Origin": hs.URL}},
		{"foreign origin", form("confirm", "yes", "csrf", tok), map[string]string{"Origin": "http://evil.example"}},
		{"foreign referer", form("confirm", "yes", "csrf", tok), map[string]string{"Referer": "http://evil.example/x"}},
		{"no origin", form("confirm", "yes", "csrf", tok), nil},
		{"cross-site", form("confirm", "yes", "csrf", tok), map[string]string{"Origin": hs.URL, "Sec-Fetch-Site": "cross-site"}},
	} {
		resp, body := b.postWith("/topics", tc.form, tc.hdr)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: %d, want 403\n%s", tc.name, resp.StatusCode, body)
		}
		if exists() {
			t.Fatalf("%s: the topic was created", tc.name)
		}
	}
	// Another browser's token does not work with this session.
	other := newBrowser(t, hs.URL)
	otherTok := other.csrf("/topics")
	if resp, _ := b.post("/topics", form("confirm", "yes", "csrf", otherTok)); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another session's token: %d, want 403", resp.StatusCode)
	}

	// First the confirmation page, which creates nothing.
	resp, body := b.postWith("/topics", form("csrf", tok), map[string]string{"Origin": hs.URL, "Referer": hs.URL + "/topics"})
	if resp.StatusCode != 200 {
		t.Fatalf("confirm page: %d\n%s", resp.StatusCode, body)
	}
	mustContain(t, "confirm page", body, "Create topic made-here", "partitions: 2", "config retention.ms=60000", `name="confirm" value="yes"`, `href="/topics"`)
	if exists() {
		t.Fatal("created before confirmation")
	}
	// The same form, confirmed (a Referer alone is enough).
	resp, _ = b.postWith("/topics", form("csrf", tok, "confirm", "yes"), map[string]string{"Referer": hs.URL + "/topics"})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/topics/made-here") {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if !exists() {
		t.Fatal("not created")
	}
	_, body = b.get(resp.Header.Get("Location"))
	mustContain(t, "created topic", body, `id="flash">created topic made-here`, `data-partition="1"`, `data-config="retention.ms"`)

	// A broker error is shown with the broker's message.
	resp, body = b.post("/topics", form("csrf", tok, "confirm", "yes", "name", "shredded", "configs", "cleanup.policy=shred"))
	if resp.StatusCode == http.StatusSeeOther || !strings.Contains(body, "shred") {
		t.Fatalf("bad config: %d\n%s", resp.StatusCode, body)
	}

	// Alter a config, then remove the override.
	resp, _ = b.post("/topics/made-here/config", url.Values{"csrf": {tok}, "key": {"retention.ms"}, "value": {"120000"}, "confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("alter: %d", resp.StatusCode)
	}
	_, body = b.get("/topics/made-here")
	mustContain(t, "altered", body, `<td class="val">120000</td>`)
	resp, _ = b.post("/topics/made-here/config", url.Values{"csrf": {tok}, "key": {"retention.ms"}, "op": {"delete"}, "confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete config: %d", resp.StatusCode)
	}
	_, body = b.get("/topics/made-here")
	if strings.Contains(body, `data-config="retention.ms"`) {
		t.Fatal("override not removed")
	}

	// Delete records: confirmation, then the log start moves.
	_, body = b.post("/topics/orders/delete-records", url.Values{"csrf": {tok}, "partition": {"0"}, "before": {"5"}})
	mustContain(t, "delete records confirm", body, "Delete the records of orders/0 before offset 5")
	resp, _ = b.post("/topics/orders/delete-records", url.Values{"csrf": {tok}, "partition": {"0"}, "before": {"5"}, "confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete records: %d", resp.StatusCode)
	}
	_, body = b.get("/topics/orders")
	mustContain(t, "after delete records", body, `<td class="num start">5</td>`)

	// Reset offsets: a preview with old and new offsets, then the commit.
	_, body = b.post("/groups/billing/reset", url.Values{"csrf": {tok}, "to": {"end"}})
	mustContain(t, "reset preview", body, "orders/0: 4 → 10", "orders/2: 0 → 10")
	resp, _ = b.post("/groups/billing/reset", url.Values{"csrf": {tok}, "to": {"offset"}, "value": {"7"}, "topic": {"orders"}, "confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	fo, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if o, _ := fo.Lookup("orders", p); o.At != 7 {
			t.Fatalf("orders/%d committed %d after reset to 7", p, o.At)
		}
	}
}

func TestHostCheck(t *testing.T) {
	addr, _ := seeded(t)
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, Listen: "console.internal:8080", AllowedHosts: []string{"sluice.example.com"}})
	u, _ := url.Parse(hs.URL)
	for host, want := range map[string]int{
		"evil.example":             http.StatusMisdirectedRequest,
		"evil.example:" + u.Port(): http.StatusMisdirectedRequest,
		"localhost:" + u.Port():    200,
		u.Host:                     200,
		"[::1]:" + u.Port():        200,
		"sluice.example.com":       200,
		"console.internal:8080":    200,
	} {
		req, _ := http.NewRequest("GET", hs.URL+"/topics", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestCookieAndHeaders(t *testing.T) {
	addr, _ := seeded(t)
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}})
	resp, err := http.Get(hs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := resp.Header.Get("Set-Cookie")
	for _, want := range []string{cookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Errorf("Set-Cookie %q: Secure over plain HTTP", sc)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); !strings.Contains(resp.Header.Get("Set-Cookie"), "Secure") {
		t.Errorf("behind a TLS proxy: Set-Cookie %q lacks Secure", resp.Header.Get("Set-Cookie"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Error("no X-Frame-Options")
	}
	// Static assets are embedded.
	for _, p := range []string{"/static/console.css", "/static/console.js", "/static/favicon.svg"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
}

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

func TestSASLLoginActsAsPrincipal(t *testing.T) {
	srv := startBroker(t, map[string]string{
		"sasl.enabled.mechanisms":                             "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
	}, []security.Listener{{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"}})
	addr := srv.ListenerAddr("SASL_PLAINTEXT").String()
	c, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, SASLMechanisms: []string{"PLAIN", "SCRAM-SHA-256"}})
	b := newBrowser(t, hs.URL)

	// A SCRAM user, created by the PLAIN admin, logs in with SCRAM.
	_, adm := adminOf(t, addr, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if _, err := adm.AlterUserSCRAMs(context.Background(), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Password: "carol-pw"}}); err != nil {
		t.Fatal(err)
	}
	carol := newBrowser(t, hs.URL)
	ctok := carol.csrf("/login")
	if _, body := carol.get("/login"); !strings.Contains(body, `<option selected>PLAIN</option><option>SCRAM-SHA-256</option>`) {
		t.Fatalf("no mechanism choice:\n%s", body)
	}
	if resp, body := carol.post("/login", url.Values{"csrf": {ctok}, "user": {"carol"}, "password": {"carol-pw"}, "mechanism": {"GSSAPI"}}); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not enabled") {
		t.Fatalf("unknown mechanism: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := carol.post("/login", url.Values{"csrf": {ctok}, "user": {"carol"}, "password": {"carol-pw"}, "mechanism": {"SCRAM-SHA-256"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("SCRAM login: %d", resp.StatusCode)
	}
	_, body := carol.get("/users")
	mustContain(t, "users as carol", body, `id="user">carol<`, `data-user="carol"`)

	resp, _ := b.get("/topics")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2Ftopics" {
		t.Fatalf("not logged in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	tok := b.csrf("/login")
	before := sessionCookie(b)
	resp, body = b.post("/login", url.Values{"csrf": {tok}, "user": {"alice"}, "password": {"wrong"}, "next": {"/topics"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "login failed") {
		t.Fatalf("bad password: %d\n%s", resp.StatusCode, body)
	}
	// Failed logins from one address are limited.
	c.mu.Lock()
	n := len(c.failures["127.0.0.1"])
	c.mu.Unlock()
	if n != 2 { // carol's mechanism, alice's password
		t.Fatalf("%d failures counted, want 2", n)
	}
	for i := n; i < loginFailures; i++ {
		if resp, _ := b.post("/login", url.Values{"csrf": {tok}, "user": {"alice"}, "password": {"wrong"}}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, resp.StatusCode)
		}
	}
	resp, body = b.post("/login", url.Values{"csrf": {tok}, "user": {"alice"}, "password": {"alice-secret"}})
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "too many failed logins") {
		t.Fatalf("after %d failures: %d\n%s", loginFailures, resp.StatusCode, body)
	}
	c.mu.Lock()
	for a, fs := range c.failures { // a minute later
		for i := range fs {
			fs[i] = fs[i].Add(-loginWindow)
		}
		c.failures[a] = fs
	}
	c.mu.Unlock()

	// The login form needs the token and our origin too.
	if resp, _ := b.postWith("/login", url.Values{"user": {"alice"}, "password": {"alice-secret"}}, map[string]string{"Origin": hs.URL}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login without token: %d", resp.StatusCode)
	}
	resp, _ = b.post("/login", url.Values{"csrf": {tok}, "user": {"alice"}, "password": {"alice-secret"}, "next": {"//evil.example/"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	after := sessionCookie(b)
	if after == "" || after == before {
		t.Fatal("the session id did not change at login")
	}
	_, body = b.get("/")
	mustContain(t, "logged in", body, `id="user">alice<`, `id="cluster-id">`)
	// Writes are the principal's: the create form is there.
	_, body = b.get("/topics")
	mustContain(t, "topics as alice", body, `id="create-topic"`)
	tok = b.csrf("/topics")
	resp, _ = b.post("/topics", url.Values{"csrf": {tok}, "name": {"alices"}, "confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create as alice: %d", resp.StatusCode)
	}

	// Log out: the session is gone, the pages ask for a login again.
	resp, _ = b.post("/logout", url.Values{"csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	c.mu.Lock()
	_, still := c.sessions[after]
	c.mu.Unlock()
	if still {
		t.Fatal("session kept after logout")
	}
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout: %d", resp.StatusCode)
	}
}

// topicExists asks a new client (kgo caches metadata for a while).
func topicExists(t *testing.T, addr, topic string) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return td.Has(topic)
}

func sessionCookie(b *browser) string {
	u, _ := url.Parse(b.base)
	for _, ck := range b.cl.Jar.Cookies(u) {
		if ck.Name == cookieName {
			return ck.Value
		}
	}
	return ""
}

func TestLagChartLayout(t *testing.T) {
	now := time.Now()
	if c := lagChart(nil, 15*time.Minute, now); !c.Empty {
		t.Fatal("no samples: not empty")
	}
	pts := []lagPoint{
		{at: now.Add(-2 * time.Minute), total: 10, parts: map[string]int64{"t/0": 4, "t/1": 6}},
		{at: now, total: 0, parts: map[string]int64{"t/0": 0, "t/1": 0}},
	}
	c := lagChart(pts, 15*time.Minute, now)
	if len(c.Lines) != 3 || c.Lines[0].Label != "total" || c.Lines[0].Last != 0 || c.Lines[2].Label != "t/1" {
		t.Fatalf("lines %+v", c.Lines)
	}
	// The newest sample is at the right edge, at zero (the bottom).
	if !strings.HasSuffix(c.Lines[0].Points, fmt.Sprintf("%d,%d", c.Width-10, c.Bottom)) {
		t.Fatalf("total points %q", c.Lines[0].Points)
	}
	if c.YTicks[len(c.YTicks)-1].Label != "10" || c.XTicks[len(c.XTicks)-1].Label != "now" {
		t.Fatalf("ticks %+v %+v", c.YTicks, c.XTicks)
	}
}

func TestSessionEvictionKeepsLogins(t *testing.T) {
	c := &Console{sessions: map[string]*session{}, opts: Options{SessionIdle: time.Hour}}
	now := time.Now()
	alice := &session{id: "alice", p: &principal{user: "alice", refs: 1}, lastUsed: now.Add(-30 * time.Minute)}
	c.sessions[alice.id] = alice
	for i := 1; i < maxSessions; i++ {
		id := fmt.Sprintf("anon-%d", i)
		c.sessions[id] = &session{id: id, lastUsed: now.Add(-time.Duration(maxSessions-i) * time.Millisecond)}
	}
	c.mu.Lock()
	c.addLocked(&session{id: "new", lastUsed: now})
	c.mu.Unlock()
	if len(c.sessions) != maxSessions {
		t.Fatalf("%d sessions", len(c.sessions))
	}
	if _, ok := c.sessions["alice"]; !ok {
		t.Fatal("the logged-in session was evicted before anonymous ones")
	}
	if _, ok := c.sessions["anon-1"]; ok {
		t.Fatal("the oldest anonymous session was kept")
	}
}

func TestTopicRate(t *testing.T) {
	h := newLagHistory(time.Minute)
	now := time.Now()
	if _, ok := h.rate("t"); ok {
		t.Fatal("a rate without samples")
	}
	h.ends["t"] = []endPoint{{at: now.Add(-10 * time.Second), sum: 100}, {at: now, sum: 150}}
	if v, ok := h.rate("t"); !ok || v != 5 {
		t.Fatalf("rate %v %v, want 5", v, ok)
	}
	if formatRate(5) != "5.0" || formatRate(1234.4) != "1234" || formatRate(0) != "0" {
		t.Fatal("formatRate")
	}
}

func TestScansAreBounded(t *testing.T) {
	addr, _ := seeded(t)
	c, hs := newTestConsole(t, Options{Bootstrap: []string{addr}})
	for i := 0; i < maxScans; i++ {
		c.scans <- struct{}{}
	}
	b := newBrowser(t, hs.URL)
	_, body := b.get("/topics/orders/messages")
	mustContain(t, "busy browser", body, "already reading records")
	_, body = b.get("/topics/profiles/compaction?key=user-1")
	mustContain(t, "busy lookup", body, "already reading records", "may not be the latest")
	for i := 0; i < maxScans; i++ {
		<-c.scans
	}
	_, body = b.get("/topics/orders/messages?partition=0&limit=1")
	mustContain(t, "free again", body, "1 records shown")
}
