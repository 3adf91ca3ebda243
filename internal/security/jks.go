package security

import (
	"bytes"
	"crypto/sha1"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"unicode/utf16"
)

// A reader of Java's JKS key store format (what keytool writes with
// -storetype JKS, and Kafka's default ssl.keystore.type):
//
//	magic 0xFEEDFEED, version (1 or 2), entry count, all big-endian uint32;
//	each entry: tag (1 private key, 2 trusted certificate), alias (uint16
//	length + modified UTF-8), creation time (uint64 ms);
//	  tag 1: uint32 length + protected key (a DER EncryptedPrivateKeyInfo
//	         with Sun's JKS key-protector OID), uint32 chain length, then
//	         each certificate;
//	  tag 2: one certificate;
//	  a certificate: (version 2 only) its type as uint16 length + "X.509",
//	  then uint32 length + DER;
//	then a 20-byte SHA-1 over the store password (UTF-16BE), the words
//	"Mighty Aphrodite" and every byte before it: the integrity check.
//
// The key protector: the data is salt (20 bytes) || ciphertext || check (20
// bytes); the key stream is the chain of SHA-1(password || previous), the
// first previous being the salt; the plaintext (ciphertext XOR key stream) is
// a PKCS#8 private key and check = SHA-1(password || plaintext).
//
// JCEKS (magic 0xCECECECE) uses another key protector and is refused.
//
// Why not a library: the maintained Go JKS reader,
// github.com/pavlo-v-chernykh/keystore-go/v4 (v4.5.0, checked 2026-12),
// reads these stores but (1) always verifies the integrity check, so a trust
// store with no ssl.truststore.password, which Java and Kafka load without
// the check, fails; (2) encodes a password as one byte per char, not Java's
// UTF-16, so any non-ASCII password gives another digest and key than
// keytool's; (3) returns the same untyped "got invalid digest" for a wrong
// store and a wrong key password, which the errors below tell apart; and
// (4) allocates every length read from the file before reading it (up to
// 4 GiB for a damaged file). This reader has none of these limits.

var (
	jksMagic   = []byte{0xFE, 0xED, 0xFE, 0xED}
	jceksMagic = []byte{0xCE, 0xCE, 0xCE, 0xCE}

	// oidJKSKeyProtector is Sun's proprietary key protection algorithm.
	oidJKSKeyProtector = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 42, 2, 17, 1, 1}

	// errJKSIntegrity: the store's SHA-1 does not match, which is a wrong
	// store password far more often than a damaged file.
	errJKSIntegrity = errors.New("the JKS integrity check failed: wrong password, or the file was altered")
	// errJKSKeyPassword: the key entry's check does not match.
	errJKSKeyPassword = errors.New("the private key does not decrypt (wrong key password?)")
)

const (
	jksTagPrivateKey  = 1
	jksTagTrustedCert = 2
	jksTagSecretKey   = 3 // JCEKS only
	jksDigestLen      = sha1.Size
)

// isJKS and isJCEKS tell a file's format by its magic number.
func isJKS(data []byte) bool   { return bytes.HasPrefix(data, jksMagic) }
func isJCEKS(data []byte) bool { return bytes.HasPrefix(data, jceksMagic) }

// jksStore is a decoded JKS file; entries are sorted by alias.
type jksStore struct {
	keys    []jksKeyEntry
	trusted []jksCertEntry
}

type jksKeyEntry struct {
	alias     string
	protected []byte // DER EncryptedPrivateKeyInfo
	chain     []*x509.Certificate
}

type jksCertEntry struct {
	alias string
	cert  *x509.Certificate
}

// jksReader walks the file, turning every overrun into an error.
type jksReader struct {
	data []byte
	off  int
	err  error
}

func (r *jksReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.data)-r.off {
		r.err = fmt.Errorf("truncated at byte %d (reading %s)", r.off, what)
		return nil
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b
}

func (r *jksReader) u16(what string) int {
	b := r.take(2, what)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

func (r *jksReader) u32(what string) int {
	b := r.take(4, what)
	if b == nil {
		return 0
	}
	v := binary.BigEndian.Uint32(b)
	if v > 1<<30 {
		r.err = fmt.Errorf("%s of %d at byte %d is out of range", what, v, r.off-4)
		return 0
	}
	return int(v)
}

func (r *jksReader) utf(what string) string { return string(r.take(r.u16(what), what)) }

// cert reads one certificate's raw DER.
func (r *jksReader) cert(version int) []byte {
	if version == 2 {
		if t := r.utf("certificate type"); r.err == nil && t != "X.509" {
			r.err = fmt.Errorf("certificate type %q is not supported (X.509 only)", t)
			return nil
		}
	}
	return r.take(r.u32("certificate length"), "certificate")
}

// parseJKS decodes a JKS file. With a non-empty password it verifies the
// integrity check first (a wrong password gives errJKSIntegrity); an empty
// password skips it, as Java's KeyStore.load(in, null) does for trust
// stores.
func parseJKS(data []byte, password string) (*jksStore, error) {
	if isJCEKS(data) {
		return nil, errors.New("this is a JCEKS key store (magic 0xCECECECE), not JKS: Sluice reads JKS, PKCS12 and PEM")
	}
	if !isJKS(data) {
		return nil, errors.New("not a JKS key store (magic 0xFEEDFEED missing)")
	}
	r := &jksReader{data: data, off: 4}
	version := r.u32("version")
	if r.err == nil && version != 1 && version != 2 {
		return nil, fmt.Errorf("JKS version %d is not supported (1 or 2)", version)
	}
	count := r.u32("entry count")
	type rawKey struct {
		alias     string
		protected []byte
		chain     [][]byte
	}
	var keys []rawKey
	var certs []struct {
		alias string
		der   []byte
	}
	seen := map[string]bool{}
	for i := 0; i < count && r.err == nil; i++ {
		tag := r.u32("entry tag")
		alias := r.utf("alias")
		r.take(8, "timestamp")
		if r.err != nil {
			break
		}
		if seen[alias] {
			return nil, fmt.Errorf("alias %q appears twice", alias)
		}
		seen[alias] = true
		switch tag {
		case jksTagPrivateKey:
			k := rawKey{alias: alias, protected: r.take(r.u32("key length"), "protected key")}
			n := r.u32("chain length")
			for j := 0; j < n && r.err == nil; j++ {
				k.chain = append(k.chain, r.cert(version))
			}
			keys = append(keys, k)
		case jksTagTrustedCert:
			der := r.cert(version)
			certs = append(certs, struct {
				alias string
				der   []byte
			}{alias, der})
		case jksTagSecretKey:
			return nil, fmt.Errorf("entry %q is a secret key, which only JCEKS stores hold", alias)
		default:
			if r.err == nil {
				return nil, fmt.Errorf("entry %q has unknown tag %d", alias, tag)
			}
		}
	}
	end := r.off
	digest := r.take(jksDigestLen, "integrity check")
	if r.err != nil {
		return nil, r.err
	}
	if password != "" {
		h := sha1.New()
		h.Write(javaPasswordBytes(password))
		h.Write([]byte("Mighty Aphrodite"))
		h.Write(data[:end])
		if subtle.ConstantTimeCompare(h.Sum(nil), digest) != 1 {
			return nil, errJKSIntegrity
		}
	}

	s := &jksStore{}
	for _, k := range keys {
		e := jksKeyEntry{alias: k.alias, protected: k.protected}
		for i, der := range k.chain {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("key entry %q, certificate %d: %w", k.alias, i, err)
			}
			e.chain = append(e.chain, c)
		}
		s.keys = append(s.keys, e)
	}
	for _, t := range certs {
		c, err := x509.ParseCertificate(t.der)
		if err != nil {
			return nil, fmt.Errorf("trusted certificate entry %q: %w", t.alias, err)
		}
		s.trusted = append(s.trusted, jksCertEntry{alias: t.alias, cert: c})
	}
	sort.Slice(s.keys, func(i, j int) bool { return s.keys[i].alias < s.keys[j].alias })
	sort.Slice(s.trusted, func(i, j int) bool { return s.trusted[i].alias < s.trusted[j].alias })
	return s, nil
}

// javaPasswordBytes is a password as Java's char[] in big-endian bytes.
func javaPasswordBytes(password string) []byte {
	units := utf16.Encode([]rune(password))
	b := make([]byte, 2*len(units))
	for i, u := range units {
		binary.BigEndian.PutUint16(b[2*i:], u)
	}
	return b
}

// privateKey decrypts the entry's key with password.
func (e *jksKeyEntry) privateKey(password string) (any, error) {
	var info struct {
		Algorithm pkix.AlgorithmIdentifier
		Data      []byte
	}
	if rest, err := asn1.Unmarshal(e.protected, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("malformed protected private key")
	}
	if !info.Algorithm.Algorithm.Equal(oidJKSKeyProtector) {
		return nil, fmt.Errorf("private key protected with %v, not the JKS key protector", info.Algorithm.Algorithm)
	}
	d := info.Data
	if len(d) < 2*sha1.Size+1 {
		return nil, errors.New("protected private key too short")
	}
	salt, enc, check := d[:sha1.Size], d[sha1.Size:len(d)-sha1.Size], d[len(d)-sha1.Size:]
	pw := javaPasswordBytes(password)
	plain := make([]byte, len(enc))
	prev := salt
	for off := 0; off < len(enc); off += sha1.Size {
		h := sha1.New()
		h.Write(pw)
		h.Write(prev)
		prev = h.Sum(nil)
		for i := 0; i < sha1.Size && off+i < len(enc); i++ {
			plain[off+i] = enc[off+i] ^ prev[i]
		}
	}
	h := sha1.New()
	h.Write(pw)
	h.Write(plain)
	if subtle.ConstantTimeCompare(h.Sum(nil), check) != 1 {
		return nil, errJKSKeyPassword
	}
	k, err := x509.ParsePKCS8PrivateKey(plain)
	if err != nil {
		return nil, fmt.Errorf("the decrypted private key is not usable PKCS#8: %v", err)
	}
	return k, nil
}

// trustedCertificates are the certificates Java's default TrustManager
// trusts in a store: every trusted-certificate entry, and the first
// certificate of every private-key entry's chain.
func (s *jksStore) trustedCertificates() []*x509.Certificate {
	var out []*x509.Certificate
	for _, t := range s.trusted {
		out = append(out, t.cert)
	}
	for _, k := range s.keys {
		if len(k.chain) > 0 {
			out = append(out, k.chain[0])
		}
	}
	return out
}

// jksKeyPair loads a JKS key store for a listener: the private-key entry
// whose alias sorts first (Java's key manager picks among several by key
// type; Sluice takes one, so a broker key store should hold one key entry),
// decrypted with keyPassword or, when that is empty, storePassword (as Java
// does), and its certificate chain. name gives a config's name as set, for
// errors.
func jksKeyPair(data []byte, loc, storePassword, keyPassword string, name func(string) string) (tls.Certificate, error) {
	where := name("ssl.keystore.location") + " " + loc
	s, err := parseJKS(data, storePassword)
	if errors.Is(err, errJKSIntegrity) {
		return tls.Certificate{}, fmt.Errorf("%s: wrong %s (%v)", where, name("ssl.keystore.password"), err)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: not a readable JKS key store: %w", where, err)
	}
	if len(s.keys) == 0 {
		return tls.Certificate{}, fmt.Errorf("%s: the JKS key store holds no private-key entry (%d trusted-certificate entries); "+
			"a key store needs the listener's key and certificate chain", where, len(s.trusted))
	}
	e := s.keys[0]
	if len(e.chain) == 0 {
		return tls.Certificate{}, fmt.Errorf("%s: key entry %q has no certificate chain", where, e.alias)
	}
	pwName, pw := name("ssl.key.password"), keyPassword
	if pw == "" {
		pwName, pw = name("ssl.keystore.password")+" (used as "+name("ssl.key.password")+" is not set)", storePassword
	}
	key, err := e.privateKey(pw)
	if errors.Is(err, errJKSKeyPassword) {
		return tls.Certificate{}, fmt.Errorf("%s: the private key of entry %q does not decrypt with %s: wrong key password", where, e.alias, pwName)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: key entry %q: %w", where, e.alias, err)
	}
	leaf := e.chain[0]
	if err := checkKeyMatches(leaf, key); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: key entry %q: %w", where, e.alias, err)
	}
	c := tls.Certificate{PrivateKey: key, Leaf: leaf}
	for _, cert := range e.chain {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// jksTrustedCertificates loads a JKS trust store; an empty password skips
// the integrity check (Kafka passes no password to Java then, which skips
// it too).
func jksTrustedCertificates(data []byte, password string, name func(string) string) ([]*x509.Certificate, error) {
	s, err := parseJKS(data, password)
	if errors.Is(err, errJKSIntegrity) {
		return nil, fmt.Errorf("wrong %s (%v)", name("ssl.truststore.password"), err)
	}
	if err != nil {
		return nil, fmt.Errorf("not a readable JKS trust store: %w", err)
	}
	certs := s.trustedCertificates()
	if len(certs) == 0 {
		return nil, errors.New("the JKS trust store holds no certificate")
	}
	return certs, nil
}
