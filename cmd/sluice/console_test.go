package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/console"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/security/sectest"
)

func TestConsoleListenFlagAndEnv(t *testing.T) {
	env := func(k string) string {
		if k == "SLUICE_CONSOLE_LISTEN" {
			return "127.0.0.1:7000"
		}
		return ""
	}
	s, _, _, err := parseArgs(nil, env, io.Discard)
	if err != nil || s.consoleListen != "127.0.0.1:7000" {
		t.Fatalf("from the variable: %q %v", s.consoleListen, err)
	}
	s, _, _, err = parseArgs([]string{"--console-listen", "127.0.0.1:7001"}, env, io.Discard)
	if err != nil || s.consoleListen != "127.0.0.1:7001" {
		t.Fatalf("the flag wins: %q %v", s.consoleListen, err)
	}
}

func TestConsoleOptionsPickListener(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	cfg, err := config.NewBroker(map[string]string{"console.allow.writes": "true", "console.allowed.hosts": "a.example, b.example"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := consoleOptions("127.0.0.1:0", cfg, []broker.BoundListener{
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: tcp("127.0.0.1:9092")},
		{Name: "SASL_PLAINTEXT", Protocol: "SASL_PLAINTEXT", Addr: tcp("0.0.0.0:9094"), Mechanisms: []string{"SCRAM-SHA-512", "PLAIN"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Bootstrap[0] != "127.0.0.1:9094" || o.SASLMechanism != "SCRAM-SHA-512" || len(o.SASLMechanisms) != 2 || !o.AllowWrites || len(o.AllowedHosts) != 2 || o.AllowedHosts[1] != "b.example" {
		t.Fatalf("with a SASL listener: %+v", o)
	}
	o, err = consoleOptions("127.0.0.1:0", config.DefaultBroker(), []broker.BoundListener{
		{Name: "SSL", Protocol: "SSL", Addr: tcp("127.0.0.1:9093")},
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: tcp("[::]:9092")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Bootstrap[0] != "[::1]:9092" || o.SASLMechanism != "" || o.AllowWrites || o.TLS != nil {
		t.Fatalf("plain text before TLS: %+v", o)
	}
}

func TestConsoleStartsWithTheBroker(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	srv := broker.NewServer(broker.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: quiet})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := config.DefaultBroker()
	if con, err := bindAndStartConsole(settings{}, cfg, srv, quiet); con != nil || err != nil {
		t.Fatalf("off by default: %v %v", con, err)
	}
	con, err := bindAndStartConsole(settings{consoleListen: "127.0.0.1:0"}, cfg, srv, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer con.Close()
	cl := &http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get("http://" + con.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="cluster-id">`) || !strings.Contains(string(body), "read-only") {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
	// A busy console address is an error (bindConsole runs before the
	// broker starts: TestBinaryConsoleListenTaken).
	if ln, err := bindConsole(settings{consoleListen: con.Addr().String()}, cfg); err == nil {
		ln.Close()
		t.Fatal("a busy console address was bound")
	}
}

// bindAndStartConsole binds the console's address and starts it, as run does
// around the broker's start.
func bindAndStartConsole(s settings, cfg *config.Broker, srv *broker.Server, logger *slog.Logger) (*console.Console, error) {
	ln, err := bindConsole(s, cfg)
	if err != nil {
		return nil, err
	}
	return startConsole(s, cfg, srv, ln, logger)
}

func TestConsoleOverSASLSSLTrustsTheListenersCertificate(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	ca := sectest.NewCA(t, "console-ca")
	leaf := ca.Server(t, "broker")
	cfg, err := config.NewBroker(map[string]string{
		"ssl.keystore.type":       "PKCS12",
		"ssl.keystore.location":   leaf.WritePKCS12(t, dir, "broker.p12", "store-pw"),
		"ssl.keystore.password":   "store-pw",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="admin" password="admin-secret" user_admin="admin-secret";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := broker.NewServer(broker.Options{DataDir: dir + "/data", Logger: quiet, Config: cfg,
		Listeners: []security.Listener{{Name: "SASL_SSL", Protocol: security.SASLSSL, Bind: "127.0.0.1:0"}}})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	con, err := bindAndStartConsole(settings{consoleListen: "127.0.0.1:0"}, cfg, srv, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer con.Close()
	base := "http://" + con.Addr().String()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	get := func(path string) string {
		resp, err := cl.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	login := get("/") // redirected to the login form
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(login)
	if m == nil || !strings.Contains(login, "SASL PLAIN") {
		t.Fatalf("no login form:\n%s", login)
	}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"csrf": {m[1]}, "user": {"admin"}, "password": {"admin-secret"}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := cl.Do(req) // follows the redirect to the overview
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `id="user">admin<`) || !strings.Contains(string(body), `id="cluster-id">`) {
		t.Fatalf("after login over SASL_SSL: %d\n%s", resp.StatusCode, body)
	}
}

// TestBinaryConsoleListenTaken: a console address that cannot be bound stops
// the broker before it creates anything (flag and console.listen).
func TestBinaryConsoleListenTaken(t *testing.T) {
	bin := sluiceBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "data")
	cfg := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(cfg, []byte("console.listen="+busy.Addr().String()+"\n"), 0o600)
	for _, args := range [][]string{
		{"--console-listen", busy.Addr().String()},
		{"--config", cfg},
	} {
		out, code := runCLI(t, bin, []string{"SLUICE_CONSOLE_LISTEN="}, append([]string{"--listen", freeAddr(t), "--data-dir", dir, "--metrics-listen", ""}, args...)...)
		if code != 1 || !strings.Contains(out, "console: listen "+busy.Addr().String()) {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: data directory created: %v", args, err)
		}
	}
}
