package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
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
	if o.Bootstrap[0] != "127.0.0.1:9094" || o.SASLMechanism != "SCRAM-SHA-512" || !o.AllowWrites || len(o.AllowedHosts) != 2 || o.AllowedHosts[1] != "b.example" {
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
