package main

// The built-in web console (internal/console): started after the broker,
// as a Kafka client of one of the broker's own listeners.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/console"
)

// consoleListen is the console's address: --console-listen (or
// SLUICE_CONSOLE_LISTEN), else console.listen; "" when it is off.
func consoleListen(s settings, cfg *config.Broker) string {
	if s.consoleListen != "" {
		return s.consoleListen
	}
	return strings.TrimSpace(cfg.Raw["console.listen"])
}

// bindConsole binds the console's address, if it has one, before the broker
// starts: an address that cannot be bound stops the broker before it
// creates anything, as an explicit metrics address does.
func bindConsole(s settings, cfg *config.Broker) (net.Listener, error) {
	listen := consoleListen(s, cfg)
	if listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("console: listen %s: %w", listen, err)
	}
	return ln, nil
}

// startConsole starts the console on ln (bound by bindConsole); it returns
// nil when the console is off (ln nil).
func startConsole(s settings, cfg *config.Broker, srv *broker.Server, ln net.Listener, logger *slog.Logger) (*console.Console, error) {
	if ln == nil {
		return nil, nil
	}
	opts, err := consoleOptions(consoleListen(s, cfg), cfg, srv.BoundListeners())
	if err != nil {
		ln.Close()
		return nil, err
	}
	opts.Listener = ln
	opts.Logger = logger
	opts.Traffic = &console.Traffic{Totals: srv.TopicTotals, NodeID: srv.NodeID(), Clustered: srv.Clustered}
	con, err := console.New(opts)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := con.Start(); err != nil {
		con.Close()
		return nil, err
	}
	return con, nil
}

// consoleOptions picks the listener the console connects to: a SASL one if
// there is any (the console then asks for a login), plain text before TLS.
func consoleOptions(listen string, cfg *config.Broker, ls []broker.BoundListener) (console.Options, error) {
	o := console.Options{Listen: listen, AllowWrites: strings.EqualFold(strings.TrimSpace(cfg.Raw["console.allow.writes"]), "true")}
	for _, h := range strings.Split(cfg.Raw["console.allowed.hosts"], ",") {
		if h = strings.TrimSpace(h); h != "" {
			o.AllowedHosts = append(o.AllowedHosts, h)
		}
	}
	rank := map[string]int{"SASL_PLAINTEXT": 0, "SASL_SSL": 1, "PLAINTEXT": 2, "SSL": 3}
	var pick *broker.BoundListener
	for i := range ls {
		if pick == nil || rank[ls[i].Protocol] < rank[pick.Protocol] {
			pick = &ls[i]
		}
	}
	if pick == nil {
		return o, errors.New("console: the broker has no Kafka listener")
	}
	addr := pick.Addr.(*net.TCPAddr)
	ip := addr.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if addr.IP.To4() == nil {
			ip = net.IPv6loopback
		}
	}
	o.Bootstrap = []string{net.JoinHostPort(ip.String(), fmt.Sprint(addr.Port))}
	if strings.HasPrefix(pick.Protocol, "SASL_") {
		for _, m := range pick.Mechanisms {
			switch m {
			case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
				o.SASLMechanisms = append(o.SASLMechanisms, m)
			}
		}
		if len(o.SASLMechanisms) > 0 {
			o.SASLMechanism = o.SASLMechanisms[0]
		}
		if o.SASLMechanism == "" {
			return o, fmt.Errorf("console: listener %s enables no SASL mechanism the console speaks (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", pick.Name)
		}
	}
	if pick.TLS != nil {
		tc, err := ownTLS(pick.TLS, ip)
		if err != nil {
			return o, fmt.Errorf("console: listener %s: %w", pick.Name, err)
		}
		o.TLS = tc
	}
	return o, nil
}

// ownTLS is a client TLS set-up that trusts exactly the certificate the
// listener presents (the console connects to its own process) and, when
// the listener asks for client certificates, presents the broker's.
func ownTLS(server *tls.Config, ip net.IP) (*tls.Config, error) {
	if len(server.Certificates) == 0 || len(server.Certificates[0].Certificate) == 0 {
		return nil, errors.New("no server certificate to trust")
	}
	cert := server.Certificates[0]
	roots := x509.NewCertPool()
	var leaf *x509.Certificate
	for i, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			leaf = c
		}
		roots.AddCert(c)
	}
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	switch {
	case len(leaf.DNSNames) > 0:
		tc.ServerName = leaf.DNSNames[0]
	case len(leaf.IPAddresses) > 0:
		tc.ServerName = leaf.IPAddresses[0].String()
	default:
		tc.ServerName = ip.String()
	}
	if server.ClientAuth >= tls.VerifyClientCertIfGiven {
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
