package security

import (
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/security/sectest"
)

func TestClientCredentials(t *testing.T) {
	cfg := brokerConfig(t, map[string]string{
		"sasl.jaas.config": PlainLoginModule + ` required username="b" password="p1" user_b="p1";`,
		"listener.name.internal.scram-sha-512.sasl.jaas.config": ScramLoginModule + ` required username="bs" password="p2";`,
	})
	if u, p, err := ClientCredentials(cfg, "INTERNAL", MechPlain); err != nil || u != "b" || p != "p1" {
		t.Fatalf("PLAIN: %q %q %v", u, p, err)
	}
	if u, p, err := ClientCredentials(cfg, "INTERNAL", MechScramSHA512); err != nil || u != "bs" || p != "p2" {
		t.Fatalf("SCRAM-SHA-512: %q %q %v", u, p, err)
	}
	for mech, want := range map[string]string{
		MechScramSHA256: "no " + ScramLoginModule, // falls back to the unprefixed PLAIN config
		"GSSAPI":        "not supported between brokers",
		MechOAuthBearer: "not supported between brokers",
	} {
		if _, _, err := ClientCredentials(cfg, "INTERNAL", mech); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", mech, err, want)
		}
	}
	noUser := brokerConfig(t, map[string]string{"sasl.jaas.config": PlainLoginModule + ` required user_b="p1";`})
	if _, _, err := ClientCredentials(noUser, "X", MechPlain); err == nil || !strings.Contains(err.Error(), "no username") {
		t.Errorf("no username: %v", err)
	}
}

// ClientTLS presents the listener's key store and verifies the server with
// its trust store; an empty endpoint identification algorithm skips the host
// name but not the chain.
func TestClientTLS(t *testing.T) {
	ca := sectest.NewCA(t, "ca")
	other := sectest.NewCA(t, "other")
	dir := t.TempDir()
	srvLeaf := ca.Server(t, "srv")
	srvCfg := brokerConfig(t, map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": srvLeaf.WritePEM(t, dir, "srv.pem"),
		"ssl.truststore.type": "PEM", "ssl.truststore.location": ca.WritePEM(t, dir, "ca.pem"),
		"ssl.client.auth": "required",
	})
	sc, err := ServerTLS(srvCfg, "SSL")
	if err != nil {
		t.Fatal(err)
	}
	client := func(props map[string]string) (error, error) {
		t.Helper()
		cc, err := ClientTLS(brokerConfig(t, props), "SSL")
		if err != nil {
			t.Fatal(err)
		}
		cc.ServerName = "localhost"
		st, serr, cerr := handshake(t, sc, cc)
		if serr == nil && (len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.CommonName != "peer") {
			t.Fatalf("the server saw %v", st.PeerCertificates)
		}
		return serr, cerr
	}
	peer := ca.Peer(t, "peer").WritePEM(t, dir, "peer.pem")
	good := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": peer,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": ca.WritePEM(t, dir, "ca2.pem")}
	if serr, cerr := client(good); serr != nil || cerr != nil {
		t.Fatalf("mutual TLS: %v / %v", serr, cerr)
	}
	wrongTrust := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": peer,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": other.WritePEM(t, dir, "other.pem"),
		"ssl.endpoint.identification.algorithm": ""}
	if _, cerr := client(wrongTrust); cerr == nil {
		t.Fatal("a server certificate from another CA was accepted with an empty endpoint identification algorithm")
	}
	if _, err := ClientTLS(brokerConfig(t, map[string]string{"ssl.endpoint.identification.algorithm": "dns"}), "SSL"); err == nil {
		t.Fatal("unknown algorithm accepted")
	}
}
