// Package sectest makes throw-away certificate authorities, certificates
// and key store files for tests of TLS listeners (ECDSA P-256, valid for an
// hour, written under the test's temporary directory). Nothing here is
// used outside tests; it must not touch anything but the files it writes.
package sectest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// CA is a self-signed certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Leaf is a certificate issued by a CA, with its private key.
type Leaf struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	CA   *CA
}

var serial int64 = 1

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// NewCA makes a CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	k := newKey(t)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Sluice tests"}},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &CA{Cert: c, Key: k}
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost.
func (ca *CA) Server(t testing.TB, cn string) *Leaf {
	return ca.issue(t, pkix.Name{CommonName: cn}, x509.ExtKeyUsageServerAuth)
}

// Peer issues a certificate for 127.0.0.1, ::1 and localhost usable as
// both server and client (a cluster node's, on its controller listener).
func (ca *CA) Peer(t testing.TB, cn string) *Leaf {
	return ca.issue(t, pkix.Name{CommonName: cn}, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Client issues a client certificate with the given subject.
func (ca *CA) Client(t testing.TB, subject pkix.Name) *Leaf {
	return ca.issue(t, subject, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(t testing.TB, subject pkix.Name, usages ...x509.ExtKeyUsage) *Leaf {
	t.Helper()
	k := newKey(t)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	if usages[0] == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, k.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &Leaf{Cert: c, Key: k, CA: ca}
}

// CertPEM is the CA certificate in PEM form.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WritePEM writes the CA certificate to dir and returns the path.
func (ca *CA) WritePEM(t testing.TB, dir, name string) string {
	return write(t, dir, name, ca.CertPEM())
}

// WritePKCS12TrustStore writes a Java-style PKCS12 trust store holding the
// CA.
func (ca *CA) WritePKCS12TrustStore(t testing.TB, dir, name, password string) string {
	t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, data)
}

// ChainPEM is the certificate followed by the CA's, in PEM form.
func (l *Leaf) ChainPEM() []byte {
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw})
	return append(out, l.CA.CertPEM()...)
}

// KeyPEM is the private key as an unencrypted PKCS#8 PEM block.
func (l *Leaf) KeyPEM(t testing.TB) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TLSCertificate is the certificate with its chain, for a tls.Config.
func (l *Leaf) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw, l.CA.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
}

// WritePEM writes a PEM key store (key, then chain) and returns its path.
func (l *Leaf) WritePEM(t testing.TB, dir, name string) string {
	return write(t, dir, name, append(l.KeyPEM(t), l.ChainPEM()...))
}

// WritePKCS12 writes a PKCS12 key store and returns its path.
func (l *Leaf) WritePKCS12(t testing.TB, dir, name, password string) string {
	t.Helper()
	data, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.CA.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, data)
}

// ClientTLS is a client configuration trusting ca and, if client is not
// nil, presenting it.
func ClientTLS(ca *CA, client *Leaf) *tls.Config {
	c := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if client != nil {
		c.Certificates = []tls.Certificate{client.TLSCertificate()}
	}
	return c
}

func write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
