package security

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/security/sectest"
)

// Fixtures: see testdata/README.md for how they were made.
const (
	jksBrokerRSA = "testdata/broker-rsa.jks" // store-secret / key key-secret
	jksBrokerEC  = "testdata/broker-ec.jks"  // store-secret (key: same)
	jksClient    = "testdata/client.jks"     // client-secret
	jksTrust     = "testdata/truststore.jks" // trust-secret
	jksMulti     = "testdata/multi.jks"      // multi-secret
	jceksSecret  = "testdata/secret.jceks"
	jksCAPEM     = "testdata/ca.pem"
)

func readFixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJKSKeyStores(t *testing.T) {
	cases := []struct {
		name    string
		props   map[string]string
		keyType string
		leafCN  string
	}{
		{"rsa with key password", map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": jksBrokerRSA,
			"ssl.keystore.password": "store-secret", "ssl.key.password": "key-secret"}, "rsa", "localhost"},
		{"ec, key password defaults to the store's", map[string]string{"ssl.keystore.location": jksBrokerEC,
			"ssl.keystore.password": "store-secret"}, "ec", "localhost"},
		{"jks file under PKCS12 type", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": jksBrokerEC,
			"ssl.keystore.password": "store-secret"}, "ec", "localhost"},
		{"several key entries: first alias", map[string]string{"ssl.keystore.location": jksMulti,
			"ssl.keystore.password": "multi-secret"}, "ec", "alpha"},
		{"listener prefix", map[string]string{"listener.name.ssl.ssl.keystore.location": jksBrokerRSA,
			"listener.name.ssl.ssl.keystore.password": "store-secret", "listener.name.ssl.ssl.key.password": "key-secret",
			"ssl.keystore.location": "/nonexistent"}, "rsa", "localhost"},
	}
	ca, err := pemCertificates(readFixture(t, jksCAPEM))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ServerTLS(brokerConfig(t, tc.props), "SSL")
			if err != nil {
				t.Fatal(err)
			}
			c := sc.Certificates[0]
			if len(c.Certificate) != 2 {
				t.Fatalf("chain of %d certificates, want leaf and CA", len(c.Certificate))
			}
			if c.Leaf.Subject.CommonName != tc.leafCN {
				t.Fatalf("leaf %s, want CN=%s", c.Leaf.Subject, tc.leafCN)
			}
			switch k := c.PrivateKey.(type) {
			case *rsa.PrivateKey:
				if tc.keyType != "rsa" {
					t.Fatalf("RSA key, want %s", tc.keyType)
				}
			case *ecdsa.PrivateKey:
				if tc.keyType != "ec" {
					t.Fatalf("EC key, want %s", tc.keyType)
				}
			default:
				t.Fatalf("key %T", k)
			}
			if !bytes.Equal(c.Certificate[1], ca[0].Raw) {
				t.Fatal("second certificate of the chain is not the test CA")
			}
			// The server's key really signs: a handshake against the CA works.
			roots := x509.NewCertPool()
			roots.AddCert(ca[0])
			cc := &tls.Config{RootCAs: roots, ServerName: "localhost"}
			if tc.leafCN != "localhost" {
				cc.ServerName = tc.leafCN
				cc.InsecureSkipVerify = true // alpha has no SAN for its name; the key is what is tested
			}
			if _, serr, cerr := handshake(t, sc, cc); serr != nil || cerr != nil {
				t.Fatalf("handshake: server %v, client %v", serr, cerr)
			}
		})
	}
}

// TestJKSMutualTLS: a JKS key store, a JKS trust store and a client whose
// certificate is checked against it (its key read from client.jks).
func TestJKSMutualTLS(t *testing.T) {
	base := map[string]string{"ssl.keystore.location": jksBrokerRSA, "ssl.keystore.password": "store-secret",
		"ssl.key.password": "key-secret", "ssl.client.auth": "required", "ssl.truststore.location": jksTrust}
	for _, pw := range []string{"trust-secret", ""} { // without a password the integrity check is skipped, as in Java
		props := map[string]string{}
		for k, v := range base {
			props[k] = v
		}
		if pw != "" {
			props["ssl.truststore.password"] = pw
		}
		sc, err := ServerTLS(brokerConfig(t, props), "SSL")
		if err != nil {
			t.Fatalf("truststore password %q: %v", pw, err)
		}
		client := jksFixtureCert(t, jksClient, "client-secret")
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(readFixture(t, jksCAPEM))
		st, serr, cerr := handshake(t, sc, &tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{client}})
		if serr != nil || cerr != nil {
			t.Fatalf("handshake: server %v, client %v", serr, cerr)
		}
		if len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.String() != "CN=jks-client,OU=test" {
			t.Fatalf("peer %v", st.PeerCertificates)
		}
		// A client the trust store does not know is refused.
		self := sectest.NewCA(t, "other-ca").Client(t, pkix.Name{CommonName: "stranger"}).TLSCertificate()
		if _, serr, _ := handshake(t, sc, &tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{self}}); serr == nil {
			t.Fatal("a client certificate from an unknown CA was accepted")
		}
	}
}

func jksFixtureCert(t *testing.T, path, password string) tls.Certificate {
	t.Helper()
	c, err := jksKeyPair(readFixture(t, path), path, password, "", func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestJKSTrustStoreContents(t *testing.T) {
	// Java's TrustManager trusts trusted-certificate entries and the leaf of
	// every key entry (checked with jshell on multi.jks, see testdata/README.md).
	certs, err := jksTrustedCertificates(readFixture(t, jksMulti), "multi-secret", func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range certs {
		got = append(got, c.Subject.CommonName)
	}
	if strings.Join(got, ",") != "sluice-test-ca,alpha,beta" {
		t.Fatalf("trusted %v", got)
	}
}

func TestJKSErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.bin")
	os.WriteFile(garbage, []byte("this is no key store at all"), 0o600)
	tampered := filepath.Join(dir, "tampered.jks")
	b := readFixture(t, jksBrokerEC)
	b[len(b)/2] ^= 0x40
	os.WriteFile(tampered, b, 0o600)
	truncated := filepath.Join(dir, "truncated.jks")
	os.WriteFile(truncated, readFixture(t, jksBrokerEC)[:700], 0o600)

	ks := func(loc, pw string, more ...string) map[string]string {
		m := map[string]string{"ssl.keystore.location": loc, "ssl.keystore.password": pw}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i]] = more[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		props map[string]string
		want  []string
	}{
		{"wrong store password", ks(jksBrokerEC, "nope"), []string{"ssl.keystore.location", "wrong ssl.keystore.password", "integrity"}},
		{"wrong store password, prefixed", map[string]string{"listener.name.ssl.ssl.keystore.location": jksBrokerEC,
			"listener.name.ssl.ssl.keystore.password": "nope"}, []string{"wrong listener.name.ssl.ssl.keystore.password"}},
		{"wrong key password", ks(jksBrokerRSA, "store-secret", "ssl.key.password", "nope"),
			[]string{"entry \"broker\"", "does not decrypt with ssl.key.password", "wrong key password"}},
		{"key password differs and is unset", ks(jksBrokerRSA, "store-secret"),
			[]string{"ssl.keystore.password (used as ssl.key.password is not set)", "wrong key password"}},
		{"no store password", ks(jksBrokerEC, ""), []string{"ssl.keystore.password is not"}},
		{"jceks", ks(jceksSecret, "jceks-secret"), []string{"JCEKS", "keytool -importkeystore"}},
		{"jceks under PEM", ks(jceksSecret, "", "ssl.keystore.type", "PEM"), []string{"JCEKS"}},
		{"jks under PEM", ks(jksBrokerEC, "", "ssl.keystore.type", "PEM"), []string{"set ssl.keystore.type=JKS"}},
		{"garbage", ks(garbage, "x"), []string{"neither a JKS", "JKS"}},
		{"tampered", ks(tampered, "store-secret"), []string{"integrity"}},
		{"truncated", ks(truncated, "store-secret"), []string{"not a readable JKS key store", "truncated"}},
		{"trust store as key store", ks(jksTrust, "trust-secret"), []string{"no private-key entry"}},
		{"wrong trust store password", map[string]string{"ssl.keystore.location": jksBrokerEC, "ssl.keystore.password": "store-secret",
			"ssl.truststore.location": jksTrust, "ssl.truststore.password": "nope"},
			[]string{"ssl.truststore.location", "wrong ssl.truststore.password"}},
		{"jks trust store under PEM", map[string]string{"ssl.keystore.location": jksBrokerEC, "ssl.keystore.password": "store-secret",
			"ssl.truststore.type": "PEM", "ssl.truststore.location": jksTrust}, []string{"set ssl.truststore.type=JKS"}},
		{"jceks trust store", map[string]string{"ssl.keystore.location": jksBrokerEC, "ssl.keystore.password": "store-secret",
			"ssl.truststore.location": jceksSecret}, []string{"ssl.truststore.location", "JCEKS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ServerTLS(brokerConfig(t, tc.props), "SSL")
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("err %q, want %q in it", err, w)
				}
			}
		})
	}
}

// TestJKSDamagedFiles: every truncation and many single-byte changes give
// an error or (for bytes the check does not cover, without a password) a
// store, never a panic.
func TestJKSDamagedFiles(t *testing.T) {
	for _, path := range []string{jksBrokerEC, jksTrust} {
		data := readFixture(t, path)
		for n := 0; n < len(data); n++ {
			if _, err := parseJKS(data[:n], "x"); err == nil {
				t.Fatalf("%s cut to %d bytes: no error", path, n)
			}
			if _, err := parseJKS(data[:n], ""); err == nil {
				t.Fatalf("%s cut to %d bytes (no password): no error", path, n)
			}
		}
		for i := 4; i < len(data); i += 3 {
			d := bytes.Clone(data)
			d[i] ^= 0xA5
			if _, err := parseJKS(d, "store-secret"); err == nil && i < len(data)-sha1.Size {
				t.Fatalf("%s byte %d changed: integrity check passed", path, i)
			}
			if s, err := parseJKS(d, ""); err == nil {
				for _, k := range s.keys {
					k.privateKey("store-secret") // must not panic
				}
			}
		}
	}
}

// TestJKSVersion1 re-encodes broker-ec.jks as a version 1 store (no
// certificate type strings) and reads it back.
func TestJKSVersion1(t *testing.T) {
	s, err := parseJKS(readFixture(t, jksBrokerEC), "store-secret")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	u32 := func(v int) { binary.Write(&b, binary.BigEndian, uint32(v)) }
	utf := func(s string) { binary.Write(&b, binary.BigEndian, uint16(len(s))); b.WriteString(s) }
	b.Write(jksMagic)
	u32(1)
	u32(2)
	k := s.keys[0]
	u32(jksTagPrivateKey)
	utf(k.alias)
	b.Write(make([]byte, 8))
	u32(len(k.protected))
	b.Write(k.protected)
	u32(len(k.chain))
	for _, c := range k.chain {
		u32(len(c.Raw))
		b.Write(c.Raw)
	}
	u32(jksTagTrustedCert)
	utf("ca")
	b.Write(make([]byte, 8))
	u32(len(k.chain[1].Raw))
	b.Write(k.chain[1].Raw)
	h := sha1.New()
	h.Write(javaPasswordBytes("v1-pass"))
	h.Write([]byte("Mighty Aphrodite"))
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))

	c, err := jksKeyPair(b.Bytes(), "v1", "v1-pass", "store-secret", func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Certificate) != 2 || c.Leaf.Subject.CommonName != "localhost" {
		t.Fatalf("chain %d, leaf %s", len(c.Certificate), c.Leaf.Subject)
	}
	certs, err := jksTrustedCertificates(b.Bytes(), "v1-pass", func(s string) string { return s })
	if err != nil || len(certs) != 2 {
		t.Fatalf("trusted %d, %v", len(certs), err)
	}
	if _, err := parseJKS(b.Bytes(), "store-secret"); err != errJKSIntegrity {
		t.Fatalf("wrong password: %v", err)
	}
	// Version 3 is refused.
	d := bytes.Clone(b.Bytes())
	d[7] = 3
	if _, err := parseJKS(d, ""); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("version 3: %v", err)
	}
}

func TestJavaPasswordBytes(t *testing.T) {
	// Java chars are UTF-16 code units: a character beyond the BMP is two.
	if got := javaPasswordBytes("a\u00e9\U0001F600"); !bytes.Equal(got, []byte{0, 'a', 0, 0xE9, 0xD8, 0x3D, 0xDE, 0x00}) {
		t.Fatalf("% x", got)
	}
}
