package security

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/config"
)

// ServerTLS builds the TLS server configuration of listener from the ssl.*
// configs, each read with Kafka's listener prefix rule
// (listener.name.<listener>.ssl.* first). Errors name the config at fault;
// nothing panics on a bad file or password.
func ServerTLS(cfg *config.Broker, listener string) (*tls.Config, error) {
	get := func(name string) string {
		v, _ := cfg.ListenerValue(listener, name)
		return strings.TrimSpace(v)
	}
	name := func(n string) string { return configName(cfg, listener, n) }

	cert, err := loadKeyStore(cfg, listener)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}}

	switch get("ssl.client.auth") {
	case "required":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		tc.ClientAuth = tls.NoClientCert
	}
	if pool, err := loadTrustStore(cfg, listener); err != nil {
		return nil, err
	} else if pool != nil {
		tc.ClientCAs = pool
	} else if tc.ClientAuth != tls.NoClientCert {
		// Like Kafka without a trust store (the JVM's default CAs): the
		// system roots verify client certificates.
		tc.ClientCAs = nil
	}

	min, max, err := tlsVersions(get("ssl.enabled.protocols"), get("ssl.protocol"))
	if err != nil {
		return nil, fmt.Errorf("%s / %s: %w", name("ssl.enabled.protocols"), name("ssl.protocol"), err)
	}
	tc.MinVersion, tc.MaxVersion = min, max

	if suites := get("ssl.cipher.suites"); suites != "" {
		ids, err := cipherSuites(suites)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name("ssl.cipher.suites"), err)
		}
		tc.CipherSuites = ids
	}
	return tc, nil
}

// configName is the name under which a listener's config was given, for
// error messages.
func configName(cfg *config.Broker, listener, n string) string {
	p := "listener.name." + strings.ToLower(listener) + "." + n
	if _, ok := cfg.Raw[p]; ok {
		return p
	}
	return n
}

// loadKeyStore reads the listener's certificate chain and private key.
func loadKeyStore(cfg *config.Broker, listener string) (tls.Certificate, error) {
	get := func(n string) string { v, _ := cfg.ListenerValue(listener, n); return v }
	name := func(n string) string { return configName(cfg, listener, n) }
	typ := strings.ToUpper(strings.TrimSpace(get("ssl.keystore.type")))
	loc := strings.TrimSpace(get("ssl.keystore.location"))
	chain, key := get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")

	if chain != "" || key != "" {
		if typ != "PEM" {
			return tls.Certificate{}, fmt.Errorf("%s and %s need ssl.keystore.type=PEM (it is %s)",
				name("ssl.keystore.certificate.chain"), name("ssl.keystore.key"), typ)
		}
		if loc != "" {
			return tls.Certificate{}, fmt.Errorf("%s and %s cannot both be set: give the key store either as a file or inline",
				name("ssl.keystore.location"), name("ssl.keystore.certificate.chain"))
		}
		if chain == "" || key == "" {
			return tls.Certificate{}, fmt.Errorf("inline PEM key store: both %s and %s are needed",
				name("ssl.keystore.certificate.chain"), name("ssl.keystore.key"))
		}
		c, err := pemKeyPair([]byte(chain+"\n"+key), get("ssl.key.password"))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s / %s: %w", name("ssl.keystore.certificate.chain"), name("ssl.keystore.key"), err)
		}
		return c, nil
	}
	if loc == "" {
		return tls.Certificate{}, fmt.Errorf("listener %s needs a key store: set %s (or ssl.keystore.certificate.chain and "+
			"ssl.keystore.key with ssl.keystore.type=PEM), prefixed listener.name.%s. for this listener only",
			listener, "ssl.keystore.location", strings.ToLower(listener))
	}
	data, err := os.ReadFile(loc)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", name("ssl.keystore.location"), err)
	}
	switch typ {
	case "PEM":
		if err := checkNotJavaStore(data, loc, name("ssl.keystore.type")); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s %s: %w", name("ssl.keystore.location"), loc, err)
		}
		if get("ssl.keystore.password") != "" {
			return tls.Certificate{}, fmt.Errorf("%s must not be set for a PEM key store (use ssl.key.password for an encrypted key)",
				name("ssl.keystore.password"))
		}
		c, err := pemKeyPair(data, get("ssl.key.password"))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s %s: %w", name("ssl.keystore.location"), loc, err)
		}
		return c, nil
	case "PKCS12", "JKS":
		// As in Java (key store compatibility mode), either type reads both
		// formats: the file's magic number decides.
		if looksPEM(data) {
			return tls.Certificate{}, fmt.Errorf("%s %s is a PEM file: set %s=PEM", name("ssl.keystore.location"), loc, name("ssl.keystore.type"))
		}
		pw := get("ssl.keystore.password")
		if pw == "" {
			return tls.Certificate{}, fmt.Errorf("%s is set but %s is not (a %s key store needs its password)",
				name("ssl.keystore.location"), name("ssl.keystore.password"), typ)
		}
		if err := checkReadableStore(data, loc, typ); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s %s: %w", name("ssl.keystore.location"), loc, err)
		}
		if isJKS(data) {
			return jksKeyPair(data, loc, pw, get("ssl.key.password"), name)
		}
		k, leaf, cas, err := pkcs12.DecodeChain(data, pw)
		if err != nil {
			if errors.Is(err, pkcs12.ErrIncorrectPassword) {
				return tls.Certificate{}, fmt.Errorf("%s %s: wrong %s", name("ssl.keystore.location"), loc, name("ssl.keystore.password"))
			}
			return tls.Certificate{}, fmt.Errorf("%s %s: not a readable PKCS12 key store with one key and its chain: %v",
				name("ssl.keystore.location"), loc, err)
		}
		c := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: k, Leaf: leaf}
		for _, ca := range cas {
			c.Certificate = append(c.Certificate, ca.Raw)
		}
		if err := checkKeyMatches(leaf, k); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s %s: %w", name("ssl.keystore.location"), loc, err)
		}
		return c, nil
	}
	return tls.Certificate{}, fmt.Errorf("%s=%s is not supported (JKS, PKCS12 or PEM)", name("ssl.keystore.type"), typ)
}

// loadTrustStore reads the listener's trusted certificates; nil without a
// trust store.
func loadTrustStore(cfg *config.Broker, listener string) (*x509.CertPool, error) {
	get := func(n string) string { v, _ := cfg.ListenerValue(listener, n); return v }
	name := func(n string) string { return configName(cfg, listener, n) }
	typ := strings.ToUpper(strings.TrimSpace(get("ssl.truststore.type")))
	loc := strings.TrimSpace(get("ssl.truststore.location"))
	inline := get("ssl.truststore.certificates")
	var certs []*x509.Certificate
	switch {
	case inline != "":
		if typ != "PEM" {
			return nil, fmt.Errorf("%s needs ssl.truststore.type=PEM (it is %s)", name("ssl.truststore.certificates"), typ)
		}
		if loc != "" {
			return nil, fmt.Errorf("%s and %s cannot both be set", name("ssl.truststore.location"), name("ssl.truststore.certificates"))
		}
		var err error
		if certs, err = pemCertificates([]byte(inline)); err != nil {
			return nil, fmt.Errorf("%s: %w", name("ssl.truststore.certificates"), err)
		}
	case loc != "":
		data, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name("ssl.truststore.location"), err)
		}
		switch typ {
		case "PEM":
			if err := checkNotJavaStore(data, loc, name("ssl.truststore.type")); err != nil {
				return nil, fmt.Errorf("%s %s: %w", name("ssl.truststore.location"), loc, err)
			}
			if certs, err = pemCertificates(data); err != nil {
				return nil, fmt.Errorf("%s %s: %w", name("ssl.truststore.location"), loc, err)
			}
		case "PKCS12", "JKS":
			if looksPEM(data) {
				return nil, fmt.Errorf("%s %s is a PEM file: set %s=PEM", name("ssl.truststore.location"), loc, name("ssl.truststore.type"))
			}
			if err := checkReadableStore(data, loc, typ); err != nil {
				return nil, fmt.Errorf("%s %s: %w", name("ssl.truststore.location"), loc, err)
			}
			if isJKS(data) {
				certs, err = jksTrustedCertificates(data, get("ssl.truststore.password"), name)
			} else {
				certs, err = pkcs12Certificates(data, get("ssl.truststore.password"))
			}
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", name("ssl.truststore.location"), loc, err)
			}
		default:
			return nil, fmt.Errorf("%s=%s is not supported (JKS, PKCS12 or PEM)", name("ssl.truststore.type"), typ)
		}
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pkcs12Certificates reads a PKCS12 trust store: Java's trusted-certificate
// entries, or (as openssl writes them) plain certificate bags.
func pkcs12Certificates(data []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err == nil && len(certs) > 0 {
		return certs, nil
	}
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, errors.New("wrong ssl.truststore.password")
	}
	blocks, err2 := pkcs12.ToPEM(data, password)
	if err2 != nil {
		if errors.Is(err2, pkcs12.ErrIncorrectPassword) {
			return nil, errors.New("wrong ssl.truststore.password")
		}
		if err == nil {
			err = err2
		}
		return nil, fmt.Errorf("not a readable PKCS12 trust store: %v", err)
	}
	for _, b := range blocks {
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, err
			}
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("the PKCS12 trust store holds no certificate")
	}
	return certs, nil
}

func looksPEM(data []byte) bool { return bytes.Contains(data, []byte("-----BEGIN ")) }

// checkNotJavaStore refuses a JKS or JCEKS file under type PEM, naming the
// type config to change.
func checkNotJavaStore(data []byte, loc, typeConfig string) error {
	switch {
	case isJKS(data):
		return fmt.Errorf("this is a Java JKS key store, not PEM: set %s=JKS", typeConfig)
	case isJCEKS(data):
		return errors.New("this is a Java JCEKS key store, which Sluice cannot read: " + jceksAdvice(loc))
	}
	return nil
}

func jceksAdvice(loc string) string {
	return "convert it with keytool -importkeystore -srcstoretype JCEKS -srckeystore " + loc +
		" -deststoretype PKCS12 -destkeystore store.p12 and set the type to PKCS12 (or use a JKS or PEM store)"
}

// checkReadableStore refuses, under type JKS or PKCS12, a file that is
// neither JKS nor PKCS12 (DER, starting with a SEQUENCE), naming its format
// where it is known.
func checkReadableStore(data []byte, loc, typ string) error {
	switch {
	case isJKS(data):
		return nil
	case isJCEKS(data):
		return errors.New("this is a Java JCEKS key store (magic 0xCECECECE), which Sluice cannot read: " + jceksAdvice(loc))
	case len(data) > 0 && data[0] == 0x30:
		return nil
	}
	return fmt.Errorf("neither a JKS (magic 0xFEEDFEED) nor a PKCS12 file, which type %s reads", typ)
}

// pemKeyPair reads a PEM key store: certificates (leaf first) and one
// private key, which may be encrypted with keyPassword.
func pemKeyPair(data []byte, keyPassword string) (tls.Certificate, error) {
	var c tls.Certificate
	var key any
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			c.Certificate = append(c.Certificate, b.Bytes)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			if key != nil {
				return c, errors.New("more than one private key")
			}
			k, err := parsePrivateKey(b, keyPassword)
			if err != nil {
				return c, err
			}
			key = k
		}
	}
	if len(c.Certificate) == 0 {
		return c, errors.New("no CERTIFICATE block found")
	}
	if key == nil {
		return c, errors.New("no PRIVATE KEY block found")
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return c, fmt.Errorf("first certificate: %w", err)
	}
	if err := checkKeyMatches(leaf, key); err != nil {
		return c, err
	}
	c.PrivateKey, c.Leaf = key, leaf
	return c, nil
}

func parsePrivateKey(b *pem.Block, password string) (any, error) {
	switch {
	case b.Type == "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the private key is encrypted: set ssl.key.password")
		}
		return decryptPKCS8(b.Bytes, password)
	case b.Headers["Proc-Type"] == "4,ENCRYPTED":
		return nil, errors.New("legacy OpenSSL-encrypted keys (Proc-Type: 4,ENCRYPTED) are not supported: " +
			"convert with openssl pkcs8 -topk8 -v2 aes-256-cbc")
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("cannot parse the %s block (PKCS#8, PKCS#1 or SEC 1 expected)", b.Type)
}

func checkKeyMatches(leaf *x509.Certificate, key any) error {
	pub, ok := key.(crypto.Signer)
	if !ok {
		return fmt.Errorf("unsupported private key type %T", key)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if eq, ok := pub.Public().(equaler); !ok || !eq.Equal(leaf.PublicKey) {
		return errors.New("the private key does not match the first certificate")
	}
	return nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no CERTIFICATE block found")
	}
	return out, nil
}

var tlsVersionNames = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// tlsVersions turns ssl.enabled.protocols and ssl.protocol into Go's
// version range.
func tlsVersions(enabled, protocol string) (uint16, uint16, error) {
	var min, max uint16
	for _, p := range strings.Split(enabled, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, ok := tlsVersionNames[p]
		if !ok {
			return 0, 0, fmt.Errorf("unknown TLS protocol %q", p)
		}
		if min == 0 || v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	if min == 0 {
		return 0, 0, errors.New("no TLS protocol enabled")
	}
	if cap, ok := tlsVersionNames[protocol]; ok && cap < max {
		max = cap
	}
	if max < min {
		return 0, 0, fmt.Errorf("ssl.protocol=%s is below every enabled protocol", protocol)
	}
	return min, max, nil
}

func cipherSuites(list string) ([]uint16, error) {
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		known[s.Name] = s.ID
	}
	var ids []uint16
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		id, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("cipher suite %q is not implemented by Go's crypto/tls", n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// PrincipalMapper returns the mapping of client-certificate subjects to
// principal names of an SSL listener (ssl.principal.mapping.rules, with the
// listener prefix rule), or nil for DEFAULT (the subject unchanged).
func PrincipalMapper(cfg *config.Broker, listener string) (func(string) (string, error), error) {
	v, _ := cfg.ListenerValue(listener, "ssl.principal.mapping.rules")
	rules, err := authz.ParsePrincipalRules(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configName(cfg, listener, "ssl.principal.mapping.rules"), err)
	}
	if rules.IsDefault() {
		return nil, nil
	}
	return rules.Map, nil
}

// PeerTLS builds the TLS configurations of a cluster's controller listener
// (SSL in listener.security.protocol.map): the server requires a client
// certificate its trust store verifies, and the client presents its key
// store's certificate and verifies the server's against the same trust
// store. Every node uses the same listener settings, so only holders of a
// trusted certificate speak raft or the controller's requests.
func PeerTLS(cfg *config.Broker, listener string) (server, client *tls.Config, err error) {
	server, err = ServerTLS(cfg, listener)
	if err != nil {
		return nil, nil, err
	}
	pool, err := loadTrustStore(cfg, listener)
	if err != nil {
		return nil, nil, err
	}
	if pool == nil {
		return nil, nil, fmt.Errorf("%s: a TLS controller listener needs a trust store (ssl.truststore.*) to verify the other nodes",
			configName(cfg, listener, "ssl.truststore.location"))
	}
	server.ClientAuth = tls.RequireAndVerifyClientCert
	server.ClientCAs = pool
	client = &tls.Config{
		Certificates: server.Certificates,
		RootCAs:      pool,
		MinVersion:   server.MinVersion,
		MaxVersion:   server.MaxVersion,
		CipherSuites: server.CipherSuites,
	}
	return server, client, nil
}
