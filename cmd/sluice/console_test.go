package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
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
	if con, err := startConsole(settings{}, cfg, srv, quiet); con != nil || err != nil {
		t.Fatalf("off by default: %v %v", con, err)
	}
	con, err := startConsole(settings{consoleListen: "127.0.0.1:0"}, cfg, srv, quiet)
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
	// A busy console address is an error.
	if _, err := startConsole(settings{consoleListen: con.Addr().String()}, cfg, srv, quiet); err == nil {
		t.Fatal("a busy console address started")
	}
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
	con, err := startConsole(settings{consoleListen: "127.0.0.1:0"}, cfg, srv, quiet)
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
