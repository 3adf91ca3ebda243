package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// certs writes a CA and a key store that a TLS server loads and a client
// trusting only ca.pem verifies, for each default host name.
func TestCertsHandshake(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"certs", "-dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	brokerPEM, err := os.ReadFile(filepath.Join(dir, "broker.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(brokerPEM), "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("broker.pem does not start with a PKCS#8 key:\n%.60s", brokerPEM)
	}
	if fi, err := os.Stat(filepath.Join(dir, "broker.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("broker.pem mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	cert, err := tls.X509KeyPair(brokerPEM, brokerPEM)
	if err != nil {
		t.Fatalf("broker.pem is not a key store: %v", err)
	}
	if len(cert.Certificate) != 2 {
		t.Fatalf("chain has %d certificates, want leaf and CA", len(cert.Certificate))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, "ok")
			}()
		}
	}()
	for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{RootCAs: pool, ServerName: host})
		if err != nil {
			t.Errorf("handshake as %s: %v", host, err)
			continue
		}
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) != "ok" {
			t.Errorf("read %q over TLS as %s", got, host)
		}
	}
	// A name the certificate does not hold fails verification.
	if c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "example.com"}); err == nil {
		c.Close()
		t.Error("handshake as example.com succeeded")
	}
}

func TestCertsNeedsDir(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"certs"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-dir is required") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
