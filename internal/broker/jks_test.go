package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security"
)

// JKS fixtures made with keytool (see ../security/testdata/README.md).
const (
	jksDir       = "../security/testdata/"
	jksBroker    = jksDir + "broker-rsa.jks" // store-secret, key key-secret; CN=localhost, SAN 127.0.0.1
	jksClientKS  = jksDir + "client.jks"     // client-secret; CN=jks-client,OU=test
	jksTrustCA   = jksDir + "truststore.jks" // trust-secret; the CA of both
	jksCAPEMFile = jksDir + "ca.pem"
)

// jksClientTLS is a client TLS config trusting the fixtures' CA, with the
// certificate of client.jks when withCert (read through the broker's own
// JKS loading, as a key store).
func jksClientTLS(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	caPEM, err := os.ReadFile(jksCAPEMFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	tc := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	if withCert {
		cfg, err := config.NewBroker(map[string]string{"ssl.keystore.location": jksClientKS, "ssl.keystore.password": "client-secret"})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := security.ServerTLS(cfg, "SSL")
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = sc.Certificates
	}
	return tc
}

// TestJKSListeners: Kafka's default store type (JKS) for the key store of
// a SASL_SSL and an SSL listener, and a JKS trust store for mTLS on the SSL
// listener, with franz-go clients.
func TestJKSListeners(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{
		"ssl.keystore.location":                         jksBroker,
		"ssl.keystore.password":                         "store-secret",
		"ssl.key.password":                              "key-secret",
		"sasl.enabled.mechanisms":                       "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": testJAAS,
		"listener.name.ssl.ssl.client.auth":             "required",
		"listener.name.ssl.ssl.truststore.location":     jksTrustCA,
		"listener.name.ssl.ssl.truststore.password":     "trust-secret",
	}, Listeners: []security.Listener{
		{Name: "PLAINTEXT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
		{Name: "SASL_SSL", Protocol: security.SASLSSL, Bind: "127.0.0.1:0"},
		{Name: "SSL", Protocol: security.SSL, Bind: "127.0.0.1:0"},
	}})
	sb := &secureBroker{testBroker: tb}

	saslCl := sb.clientOn("SASL_SSL", kgo.DialTLSConfig(jksClientTLS(t, false)),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if got, err := metadataBroker(t, saslCl); err != nil || got != sb.addrOf("SASL_SSL") {
		t.Fatalf("SASL_SSL with a JKS key store: %s %v", got, err)
	}
	produceConsume(t, saslCl, sb.addrOf("PLAINTEXT"), "jks-topic")

	mtls := sb.clientOn("SSL", kgo.DialTLSConfig(jksClientTLS(t, true)))
	if _, err := metadataBroker(t, mtls); err != nil {
		t.Fatalf("SSL with a client certificate the JKS trust store trusts: %v", err)
	}
	if err := authErr(sb.clientOn("SSL", kgo.DialTLSConfig(jksClientTLS(t, false)))); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	// The principal is the subject of client.jks's certificate.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(mtls).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "dave",
		Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.logs.text(), `by="User:CN=jks-client,OU=test"`) {
		t.Errorf("principal not logged:\n%s", sb.logs.text())
	}
}

func TestJKSStartupErrors(t *testing.T) {
	ssl := []security.Listener{{Name: "SSL", Protocol: security.SSL, Bind: "127.0.0.1:0"}}
	cases := []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"ssl.keystore.location": jksBroker, "ssl.keystore.password": "wrong", "ssl.key.password": "key-secret"},
			"wrong ssl.keystore.password"},
		{map[string]string{"ssl.keystore.location": jksBroker, "ssl.keystore.password": "store-secret", "ssl.key.password": "wrong"},
			"does not decrypt with ssl.key.password"},
		{map[string]string{"ssl.keystore.location": jksBroker, "ssl.keystore.password": "store-secret", "ssl.key.password": "key-secret",
			"ssl.truststore.location": jksTrustCA, "ssl.truststore.password": "wrong"}, "wrong ssl.truststore.password"},
	}
	for _, tc := range cases {
		cfg, err := config.NewBroker(tc.props)
		if err != nil {
			t.Fatal(err)
		}
		srv := NewServer(Options{Listeners: ssl, DataDir: t.TempDir(), Config: cfg, Logger: slog.New(slog.DiscardHandler)})
		err = srv.Start()
		if err == nil {
			srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
}
