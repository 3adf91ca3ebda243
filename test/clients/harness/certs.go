package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cmdCerts writes a throw-away certificate authority (DIR/ca.pem, the
// certificate clients trust) and a broker key store signed by it
// (DIR/broker.pem: a PKCS#8 ECDSA P-256 key, then the broker certificate and
// the CA certificate), for the suite's TLS listeners. librdkafka (OpenSSL),
// Java and Node all verify P-256 chains; the broker certificate names every
// -hosts entry (IP addresses as IP SANs), so hostname verification passes.
func cmdCerts(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory to write ca.pem and broker.pem into (required)")
	hosts := fs.String("hosts", "127.0.0.1,::1,localhost", "comma-separated host names and IP addresses of the broker certificate")
	validity := fs.Duration("validity", 7*24*time.Hour, "how long the certificates are valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("certs: -dir is required")
	}
	if *validity <= 0 {
		return fmt.Errorf("certs: -validity must be positive")
	}
	ca, broker, err := makeCerts(splitHosts(*hosts), time.Now(), *validity)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	caPath, brokerPath := filepath.Join(*dir, "ca.pem"), filepath.Join(*dir, "broker.pem")
	if err := os.WriteFile(caPath, ca, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(brokerPath, broker, 0o600); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s and %s\n", caPath, brokerPath)
	return err
}

func splitHosts(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// makeCerts returns the CA certificate (PEM) and the broker key store (PEM:
// private key, broker certificate, CA certificate) for hosts.
func makeCerts(hosts []string, now time.Time, validity time.Duration) (caPEM, brokerPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, fmt.Errorf("certs: no host names")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	caSerial, err := serial()
	if err != nil {
		return nil, nil, err
	}
	leafSerial, err := serial()
	if err != nil {
		return nil, nil, err
	}
	notBefore := now.Add(-time.Hour) // tolerate a little clock skew
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "Sluice client-suite CA", Organization: []string{"Sluice test"}},
		NotBefore:             notBefore,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: leafSerial,
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"Sluice test"}},
		NotBefore:    notBefore,
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	brokerPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	brokerPEM = append(brokerPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})...)
	brokerPEM = append(brokerPEM, caPEM...)
	return caPEM, brokerPEM, nil
}

// serial is a random positive 128-bit certificate serial number.
func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}
