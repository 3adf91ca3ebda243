package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-broker/sluice/internal/config"
)

// The client side of a listener, for a broker that connects to other
// brokers' inter-broker listener (replica fetchers): as in Kafka, the broker
// uses its own settings for that listener — its key store as the client
// certificate, its trust store to verify the other broker, and the
// username/password of the listener's JAAS login module.

// ScramLoginModule is the JAAS class of SCRAM clients (and of a broker's
// inter-broker SCRAM credentials).
const ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"

// ClientTLS builds the TLS client configuration a broker uses to connect to
// listener on another broker: the listener's key store (if one is set) is
// the client certificate, its trust store (else the system roots) verifies
// the server, and ssl.endpoint.identification.algorithm=https (the default)
// also checks the server's host name; an empty value checks the chain only.
func ClientTLS(cfg *config.Broker, listener string) (*tls.Config, error) {
	get := func(name string) string {
		v, _ := cfg.ListenerValue(listener, name)
		return strings.TrimSpace(v)
	}
	name := func(n string) string { return configName(cfg, listener, n) }
	tc := &tls.Config{}
	if get("ssl.keystore.location") != "" || get("ssl.keystore.certificate.chain") != "" {
		cert, err := loadKeyStore(cfg, listener)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	pool, err := loadTrustStore(cfg, listener)
	if err != nil {
		return nil, err
	}
	tc.RootCAs = pool // nil: the system roots
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
	switch alg := strings.ToLower(get("ssl.endpoint.identification.algorithm")); alg {
	case "https":
	case "":
		// Verify the chain but not the host name, as Kafka does with an
		// empty algorithm.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		}
	default:
		return nil, fmt.Errorf("%s: unknown algorithm %q (https or empty)", name("ssl.endpoint.identification.algorithm"), alg)
	}
	return tc, nil
}

// ClientCredentials returns the username and password a broker presents with
// mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) on listener: the
// username and password options of the listener's login module in
// listener.name.<l>.<mechanism>.sasl.jaas.config, else sasl.jaas.config
// (PlainLoginModule for PLAIN, ScramLoginModule for SCRAM), as Kafka reads a
// broker's inter-broker credentials.
func ClientCredentials(cfg *config.Broker, listener, mechanism string) (user, password string, err error) {
	var class string
	switch mechanism {
	case MechPlain:
		class = PlainLoginModule
	case MechScramSHA256, MechScramSHA512:
		class = ScramLoginModule
	default:
		return "", "", fmt.Errorf("mechanism %s is not supported between brokers (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "+
			"Kafka's default is GSSAPI, so set sasl.mechanism.inter.broker.protocol)", mechanism)
	}
	jaasName := strings.ToLower(mechanism) + ".sasl.jaas.config"
	jaas, ok := cfg.ListenerValue(listener, jaasName)
	if !ok {
		jaasName = "sasl.jaas.config"
		jaas, ok = cfg.ListenerValue(listener, jaasName)
	}
	full := configName(cfg, listener, jaasName)
	if !ok || strings.TrimSpace(jaas) == "" {
		return "", "", fmt.Errorf("listener %s: no JAAS config for the inter-broker %s client: set listener.name.%s.%s.sasl.jaas.config "+
			"to %s required username=\"...\" password=\"...\";", listener, mechanism, strings.ToLower(listener),
			strings.ToLower(mechanism), class)
	}
	mods, err := ParseJAAS(jaas)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", full, err)
	}
	for _, m := range mods {
		if m.Class != class {
			continue
		}
		user, password = m.Options["username"], m.Options["password"]
		if user == "" {
			return "", "", fmt.Errorf("%s: the %s has no username option (the broker's own inter-broker user)", full, class)
		}
		return user, password, nil
	}
	return "", "", fmt.Errorf("%s: no %s entry (needed for the inter-broker %s client)", full, class, mechanism)
}
