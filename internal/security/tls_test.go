package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security/sectest"
)

func brokerConfig(t *testing.T, props map[string]string) *config.Broker {
	t.Helper()
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// handshake runs a TLS handshake between server config sc and client
// config cc over a pipe and returns the server's view.
func handshake(t *testing.T, sc, cc *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, sc)
	cerr := make(chan error, 1)
	go func() {
		c := tls.Client(b, cc)
		err := c.Handshake()
		if err == nil {
			// TLS 1.3 reports a refused client certificate on the first read.
			_, err = c.Read(make([]byte, 1))
		}
		cerr <- err
		b.Close()
	}()
	serr := srv.Handshake()
	if serr == nil {
		srv.Write([]byte{1})
	} else {
		a.Close()
	}
	return srv.ConnectionState(), serr, <-cerr
}

func TestServerTLSKeyStores(t *testing.T) {
	dir := t.TempDir()
	ca := sectest.NewCA(t, "test-ca")
	srv := ca.Server(t, "broker")
	pemPath := srv.WritePEM(t, dir, "server.pem")
	p12Path := srv.WritePKCS12(t, dir, "server.p12", "store-pw")
	encKey := encryptPKCS8(t, srv.KeyPEM(t), "key-pw")

	cases := map[string]map[string]string{
		"pem file": {"ssl.keystore.type": "PEM", "ssl.keystore.location": pemPath},
		"pem inline": {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": string(srv.ChainPEM()),
			"ssl.keystore.key": string(srv.KeyPEM(t))},
		"pem inline encrypted": {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": string(srv.ChainPEM()),
			"ssl.keystore.key": string(encKey), "ssl.key.password": "key-pw"},
		"pkcs12":             {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12Path, "ssl.keystore.password": "store-pw"},
		"pkcs12 as JKS type": {"ssl.keystore.location": p12Path, "ssl.keystore.password": "store-pw"},
		"listener prefix": {"listener.name.ssl.ssl.keystore.type": "PKCS12", "listener.name.ssl.ssl.keystore.location": p12Path,
			"listener.name.ssl.ssl.keystore.password": "store-pw", "ssl.keystore.location": "/nonexistent"},
	}
	for name, props := range cases {
		t.Run(name, func(t *testing.T) {
			sc, err := ServerTLS(brokerConfig(t, props), "SSL")
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Certificates) != 1 || len(sc.Certificates[0].Certificate) != 2 {
				t.Fatalf("chain: %+v", sc.Certificates)
			}
			cs, serr, cerr := handshake(t, sc, sectest.ClientTLS(ca, nil))
			if serr != nil || cerr != nil {
				t.Fatalf("handshake: %v / %v", serr, cerr)
			}
			if cs.Version != tls.VersionTLS13 {
				t.Errorf("version %x", cs.Version)
			}
		})
	}
}

func TestServerTLSErrors(t *testing.T) {
	dir := t.TempDir()
	ca := sectest.NewCA(t, "test-ca")
	srv := ca.Server(t, "broker")
	other := ca.Server(t, "other")
	pemPath := srv.WritePEM(t, dir, "server.pem")
	p12Path := srv.WritePKCS12(t, dir, "server.p12", "store-pw")
	jks := filepath.Join(dir, "server.jks")
	os.WriteFile(jks, []byte{0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2}, 0o600)
	mismatch := filepath.Join(dir, "mismatch.pem")
	os.WriteFile(mismatch, append(other.KeyPEM(t), srv.ChainPEM()...), 0o600)
	encKey := encryptPKCS8(t, srv.KeyPEM(t), "key-pw")

	cases := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"no key store", map[string]string{}, "needs a key store"},
		{"missing file", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": filepath.Join(dir, "nope.pem")}, "no such file"},
		{"wrong pkcs12 password", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12Path,
			"ssl.keystore.password": "bad"}, "wrong ssl.keystore.password"},
		{"pkcs12 without password", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12Path}, "ssl.keystore.password"},
		{"jks", map[string]string{"ssl.keystore.location": jks, "ssl.keystore.password": "x"}, "JKS"},
		{"pem under PKCS12 type", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pemPath,
			"ssl.keystore.password": "x"}, "set ssl.keystore.type=PEM"},
		{"key mismatch", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": mismatch}, "does not match"},
		{"pkcs12 file as PEM", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": p12Path}, "no CERTIFICATE"},
		{"inline without PEM type", map[string]string{"ssl.keystore.certificate.chain": string(srv.ChainPEM()),
			"ssl.keystore.key": string(srv.KeyPEM(t))}, "ssl.keystore.type=PEM"},
		{"encrypted key without password", map[string]string{"ssl.keystore.type": "PEM",
			"ssl.keystore.certificate.chain": string(srv.ChainPEM()), "ssl.keystore.key": string(encKey)}, "ssl.key.password"},
		{"encrypted key wrong password", map[string]string{"ssl.keystore.type": "PEM",
			"ssl.keystore.certificate.chain": string(srv.ChainPEM()), "ssl.keystore.key": string(encKey),
			"ssl.key.password": "nope"}, "wrong password"},
		{"prefixed error names prefix", map[string]string{"listener.name.ssl.ssl.keystore.type": "PKCS12",
			"listener.name.ssl.ssl.keystore.location": p12Path, "listener.name.ssl.ssl.keystore.password": "bad"},
			"listener.name.ssl.ssl.keystore.location"},
		{"truststore missing", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": pemPath,
			"ssl.truststore.type": "PEM", "ssl.truststore.location": filepath.Join(dir, "nope")}, "ssl.truststore.location"},
		{"unknown cipher", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": pemPath,
			"ssl.cipher.suites": "TLS_NOPE"}, "TLS_NOPE"},
		{"protocol below enabled", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": pemPath,
			"ssl.enabled.protocols": "TLSv1.3", "ssl.protocol": "TLSv1.2"}, "below every enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ServerTLS(brokerConfig(t, tc.props), "SSL")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServerTLSClientAuth(t *testing.T) {
	dir := t.TempDir()
	ca := sectest.NewCA(t, "test-ca")
	rogue := sectest.NewCA(t, "rogue-ca")
	srv := ca.Server(t, "broker")
	alice := ca.Client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}})
	mallory := rogue.Client(t, pkix.Name{CommonName: "mallory"})
	base := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": srv.WritePEM(t, dir, "s.pem")}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	pemTrust := with("ssl.client.auth", "required", "ssl.truststore.type", "PEM", "ssl.truststore.location", ca.WritePEM(t, dir, "ca.pem"))
	p12Trust := with("ssl.client.auth", "required", "ssl.truststore.type", "PKCS12",
		"ssl.truststore.location", ca.WritePKCS12TrustStore(t, dir, "trust.p12", "trust-pw"), "ssl.truststore.password", "trust-pw")
	inlineTrust := with("ssl.client.auth", "requested", "ssl.truststore.type", "PEM", "ssl.truststore.certificates", string(ca.CertPEM()))

	for name, props := range map[string]map[string]string{"pem": pemTrust, "pkcs12": p12Trust} {
		t.Run(name, func(t *testing.T) {
			sc, err := ServerTLS(brokerConfig(t, props), "SSL")
			if err != nil {
				t.Fatal(err)
			}
			cs, serr, cerr := handshake(t, sc, sectest.ClientTLS(ca, alice))
			if serr != nil || cerr != nil {
				t.Fatalf("handshake: %v / %v", serr, cerr)
			}
			if got := certificatePrincipalForTest(&cs); got != "User:CN=alice,OU=eng,O=Acme" {
				t.Errorf("principal %q", got)
			}
			if _, serr, _ := handshake(t, sc, sectest.ClientTLS(ca, nil)); serr == nil {
				t.Error("required: a client without a certificate was accepted")
			}
			if _, serr, _ := handshake(t, sc, forceCert(ca, mallory)); serr == nil {
				t.Error("required: a certificate from another CA was accepted")
			}
		})
	}
	t.Run("requested", func(t *testing.T) {
		sc, err := ServerTLS(brokerConfig(t, inlineTrust), "SSL")
		if err != nil {
			t.Fatal(err)
		}
		if cs, serr, cerr := handshake(t, sc, sectest.ClientTLS(ca, nil)); serr != nil || cerr != nil || len(cs.PeerCertificates) != 0 {
			t.Fatalf("requested without certificate: %v / %v", serr, cerr)
		}
		if _, serr, _ := handshake(t, sc, forceCert(ca, mallory)); serr == nil {
			t.Error("requested: an unverifiable certificate was accepted")
		}
	})
	t.Run("versions", func(t *testing.T) {
		sc, err := ServerTLS(brokerConfig(t, with("ssl.enabled.protocols", "TLSv1.2", "ssl.cipher.suites",
			"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")), "SSL")
		if err != nil {
			t.Fatal(err)
		}
		cs, serr, cerr := handshake(t, sc, sectest.ClientTLS(ca, nil))
		if serr != nil || cerr != nil || cs.Version != tls.VersionTLS12 || cs.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
			t.Fatalf("TLS 1.2 only: %v / %v, %x %x", serr, cerr, cs.Version, cs.CipherSuite)
		}
		cc := sectest.ClientTLS(ca, nil)
		cc.MinVersion = tls.VersionTLS13
		if _, serr, _ := handshake(t, sc, cc); serr == nil {
			t.Error("a TLS 1.3-only client was accepted by a TLS 1.2-only listener")
		}
	})
}

// forceCert presents leaf even when the server's acceptable CAs do not
// include its issuer (Go's client would otherwise send nothing).
func forceCert(ca *sectest.CA, leaf *sectest.Leaf) *tls.Config {
	c := sectest.ClientTLS(ca, nil)
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		cert := leaf.TLSCertificate()
		return &cert, nil
	}
	return c
}

// certificatePrincipalForTest mirrors the wire layer's principal of a TLS
// client (User:<subject>), to check the subject form Kafka prints.
func certificatePrincipalForTest(cs *tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 {
		return "User:ANONYMOUS"
	}
	return "User:" + cs.PeerCertificates[0].Subject.String()
}

// encryptPKCS8 encrypts a PKCS#8 PEM key as openssl pkcs8 -topk8 -v2
// aes-256-cbc does (PBES2, PBKDF2-HMAC-SHA256, AES-256-CBC).
func encryptPKCS8(t *testing.T, keyPEM []byte, password string) []byte {
	t.Helper()
	b, _ := pem.Decode(keyPEM)
	salt, iv := make([]byte, 8), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(b.Bytes)%16
	plain := append(append([]byte(nil), b.Bytes...), []byte(strings.Repeat(string(rune(pad)), pad))...)
	block, _ := aes.NewCipher(key)
	ct := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, plain)
	mustMarshal := func(v any) asn1.RawValue {
		der, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: der}
	}
	kdf := pbkdf2Params{Salt: salt, Iterations: 2048, PRF: pkix.AlgorithmIdentifier{
		Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, Parameters: asn1.NullRawValue}}
	params := pbes2Params{
		KDF:        pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: mustMarshal(kdf)},
		Encryption: pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, Parameters: mustMarshal(iv)},
	}
	info := encryptedPrivateKeyInfo{Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: mustMarshal(params)}, Data: ct}
	der, err := asn1.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x509.ParsePKCS8PrivateKey(b.Bytes); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}
