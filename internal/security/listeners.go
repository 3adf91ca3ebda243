package security

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/config"
)

// Security protocols, as Kafka names them.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// Listener is one configured listener.
type Listener struct {
	// Name is the listener name in upper case (PLAINTEXT, SASL_SSL, INTERNAL).
	Name string
	// Protocol is its security protocol (one of the constants above).
	Protocol string
	// Bind is host:port to listen on ("" host: every interface; "localhost":
	// 127.0.0.1 and ::1; port 0: any free port).
	Bind string
	// Advertise is host:port given to clients, "" to derive it from Bind.
	Advertise string
}

// TLS reports whether the protocol runs over TLS.
func (l Listener) TLS() bool { return l.Protocol == SSL || l.Protocol == SASLSSL }

// SASL reports whether the protocol authenticates with SASL.
func (l Listener) SASL() bool { return l.Protocol == SASLPlaintext || l.Protocol == SASLSSL }

// ParseListeners reads listeners, advertised.listeners and
// listener.security.protocol.map as Kafka does: each listener is
// NAME://host:port (an entry without "NAME://" is a PLAINTEXT listener, as
// Sluice has always accepted); names are case-insensitive and must be
// unique, as must non-zero ports (except that, as in Kafka, an IPv4 and an
// IPv6 address may share one); every name needs a protocol in the map;
// an advertised listener must name a listener. Listeners named in
// controller.listener.names are KRaft controller listeners: Sluice has no
// controller quorum, so they are left out (Kafka's stock combined-mode
// server.properties lists CONTROLLER://:9093).
func ParseListeners(cfg *config.Broker) ([]Listener, error) {
	controllers := map[string]bool{}
	if v, ok := cfg.Value("controller.listener.names"); ok {
		for _, n := range strings.Split(v, ",") {
			if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
				controllers[n] = true
			}
		}
	}
	protoMap, err := config.ParseProtocolMap(mustValue(cfg, "listener.security.protocol.map"))
	if err != nil {
		return nil, fmt.Errorf("listener.security.protocol.map: %w", err)
	}
	lst, err := parseListenerList(mustValue(cfg, "listeners"))
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	if len(lst) == 0 {
		return nil, errors.New("listeners: no listener given")
	}
	out := make([]Listener, 0, len(lst))
	names := map[string]bool{}
	ports := map[string][]listenerEntry{}
	for _, e := range lst {
		if names[e.name] {
			return nil, fmt.Errorf("listeners: listener name %s appears more than once", e.name)
		}
		names[e.name] = true
		if controllers[e.name] {
			continue
		}
		proto, ok := protoMap[e.name]
		if !ok {
			return nil, fmt.Errorf("listeners: listener %s has no security protocol in listener.security.protocol.map "+
				"(add %s:PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", e.name, e.name)
		}
		_, port, _ := net.SplitHostPort(e.addr)
		if others := ports[port]; len(others) > 0 && port != "0" && !(len(others) == 1 && ipv4AndIPv6(others[0], e)) {
			return nil, fmt.Errorf("listeners: listeners %s and %s both use port %s (only an IPv4 and an IPv6 address may share a port)",
				others[0].name, e.name, port)
		}
		ports[port] = append(ports[port], e)
		out = append(out, Listener{Name: e.name, Protocol: proto, Bind: e.addr})
	}
	if len(out) == 0 {
		return nil, errors.New("listeners: only controller listeners (controller.listener.names) are given; add a client listener such as PLAINTEXT://:9092")
	}
	if adv, ok := cfg.Raw["advertised.listeners"]; ok && strings.TrimSpace(adv) != "" {
		alst, err := parseListenerList(adv)
		if err != nil {
			return nil, fmt.Errorf("advertised.listeners: %w", err)
		}
		seen := map[string]bool{}
		for _, a := range alst {
			if seen[a.name] {
				return nil, fmt.Errorf("advertised.listeners: listener name %s appears more than once", a.name)
			}
			seen[a.name] = true
			if controllers[a.name] {
				continue
			}
			i := indexOf(out, a.name)
			if i < 0 {
				return nil, fmt.Errorf("advertised.listeners: %s is not a listener in listeners", a.name)
			}
			host, port, _ := net.SplitHostPort(a.addr)
			if host == "0.0.0.0" || host == "::" {
				return nil, fmt.Errorf("advertised.listeners: %s advertises %s, which clients cannot connect to", a.name, host)
			}
			if p, _ := strconv.Atoi(port); p == 0 {
				return nil, fmt.Errorf("advertised.listeners: %s needs a port in 1-65535", a.name)
			}
			out[i].Advertise = a.addr
		}
	}
	return out, nil
}

// ipv4AndIPv6 reports whether one of a and b binds an IPv4 address and
// the other an IPv6 one: Kafka lets such a pair share a port (KIP-797).
func ipv4AndIPv6(a, b listenerEntry) bool {
	v := func(e listenerEntry) int {
		host, _, _ := net.SplitHostPort(e.addr)
		ip := net.ParseIP(host)
		switch {
		case ip == nil:
			return 0
		case ip.To4() != nil:
			return 4
		}
		return 6
	}
	va, vb := v(a), v(b)
	return va != 0 && vb != 0 && va != vb
}

func indexOf(ls []Listener, name string) int {
	for i, l := range ls {
		if l.Name == name {
			return i
		}
	}
	return -1
}

type listenerEntry struct{ name, addr string }

func parseListenerList(v string) ([]listenerEntry, error) {
	var out []listenerEntry
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "://")
		if !ok {
			name, addr = Plaintext, item
		}
		name = strings.ToUpper(strings.TrimSpace(name))
		if name == "" || strings.ContainsAny(name, " .:/") {
			return nil, fmt.Errorf("%q: bad listener name", item)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, fmt.Errorf("%q: port %q is not a number in 0-65535", item, port)
		} else {
			port = strconv.FormatUint(p, 10)
		}
		out = append(out, listenerEntry{name: name, addr: net.JoinHostPort(host, port)})
	}
	return out, nil
}

// mustValue reads a broker config that has a default.
func mustValue(cfg *config.Broker, name string) string {
	v, _ := cfg.Value(name)
	return v
}

// ControllerListeners returns the listeners named in
// controller.listener.names, in that order, with their bind addresses (a
// cluster node serves the quorum's traffic on the first).
func ControllerListeners(cfg *config.Broker) ([]Listener, error) {
	v, _ := cfg.Value("controller.listener.names")
	lst, err := parseListenerList(mustValue(cfg, "listeners"))
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	var out []Listener
	for _, n := range strings.Split(v, ",") {
		n = strings.ToUpper(strings.TrimSpace(n))
		for _, e := range lst {
			if n != "" && e.name == n {
				out = append(out, Listener{Name: e.name, Protocol: Plaintext, Bind: e.addr})
			}
		}
	}
	return out, nil
}
