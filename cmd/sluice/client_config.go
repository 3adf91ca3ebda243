package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/security"
)

// propsOptions returns the client options for Kafka client properties —
// what Kafka's tools take as --command-config: security.protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), sasl.mechanism (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512) with the username and password of
// sasl.jaas.config (or sasl.username and sasl.password, which the --user and
// --password flags set), and a PEM trust store (ssl.truststore.location, or
// ssl.truststore.certificates inline; without one the system's roots are
// used). A setting it cannot honour is refused with a message rather than
// ignored.
func propsOptions(props map[string]string) ([]kgo.Opt, error) {
	protocol := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch protocol {
	case "PLAINTEXT":
	case "SSL", "SASL_SSL":
		tc, err := clientTLS(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	case "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("security.protocol=%s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", protocol)
	}
	if id := props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	if strings.HasPrefix(protocol, "SASL_") {
		m, err := clientSASL(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, m)
	}
	return opts, nil
}

func clientTLS(props map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	var pemData []byte
	switch {
	case props["ssl.truststore.certificates"] != "":
		pemData = []byte(props["ssl.truststore.certificates"])
	case props["ssl.truststore.location"] != "":
		if t := strings.ToUpper(props["ssl.truststore.type"]); t != "PEM" {
			return nil, fmt.Errorf("ssl.truststore.type=%s: the sluice admin commands read PEM trust stores only (set ssl.truststore.type=PEM)", props["ssl.truststore.type"])
		}
		var err error
		if pemData, err = os.ReadFile(props["ssl.truststore.location"]); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
	}
	if pemData != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("the trust store holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func clientSASL(props map[string]string) (kgo.Opt, error) {
	mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	if mech == "" {
		return nil, fmt.Errorf("no SASL mechanism: --sasl-mechanism or sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
	}
	user, pass := props["sasl.username"], props["sasl.password"]
	if jaas := props["sasl.jaas.config"]; jaas != "" {
		modules, err := security.ParseJAAS(jaas)
		if err != nil || len(modules) != 1 {
			return nil, fmt.Errorf("sasl.jaas.config must hold one login module with username and password")
		}
		if user == "" {
			user = modules[0].Options["username"]
		}
		if pass == "" {
			pass = modules[0].Options["password"]
		}
	}
	if user == "" {
		return nil, fmt.Errorf("no SASL user: --user, or sasl.jaas.config with a username")
	}
	switch mech {
	case "PLAIN":
		return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), nil
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()), nil
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), nil
	}
	return nil, fmt.Errorf("sasl.mechanism=%s: the sluice client commands speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", mech)
}
