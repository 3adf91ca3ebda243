// Listeners: which listeners the server binds, how each is secured, and
// which address clients are told for each.
//
// As Kafka does, a client is answered (Metadata, FindCoordinator,
// DescribeCluster) with the advertised address of the listener it
// connected through, so a client on a SASL_SSL listener is never sent to
// the PLAINTEXT port. The set-up of every listener (key store, trust store,
// JAAS users, mechanisms) is read before anything is bound, so a bad file,
// password or mechanism stops the start with an error naming the config.

package broker

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/wire"
)

// listenerState is what handlers need of one listener.
type listenerState struct {
	name     string
	protocol string
	host     string // advertised
	port     int32
	sasl     *security.SASLConfig // nil without SASL
}

// endpoint returns the advertised address of the listener r came through
// (the first listener's for a request without one).
func (b *Broker) endpoint(r *wire.Request) (string, int32) {
	if r != nil {
		if l, ok := b.listeners[r.Conn.ListenerName()]; ok {
			return l.host, l.port
		}
	}
	return b.host, b.port
}

// listener returns the state of the listener r came through, or nil.
func (b *Broker) listener(r *wire.Request) *listenerState {
	if r == nil {
		return nil
	}
	return b.listeners[r.Conn.ListenerName()]
}

// advertisedList renders the advertised addresses for the start-up log.
func (b *Broker) advertisedList() []string {
	var out []string
	for _, l := range b.listenerOrder() {
		out = append(out, l.name+"://"+net.JoinHostPort(l.host, strconv.Itoa(int(l.port))))
	}
	return out
}

func (b *Broker) listenerOrder() []*listenerState {
	out := slices.Collect(maps.Values(b.listeners))
	slices.SortFunc(out, func(x, y *listenerState) int { return strings.Compare(x.name, y.name) })
	return out
}

// configuredListeners returns the listeners to serve: Options.Listeners,
// else one PLAINTEXT listener on Options.Listen, else those of the config
// (whose first listener's address --advertise may override).
func (s *Server) configuredListeners() ([]security.Listener, error) {
	o := &s.opts
	switch {
	case len(o.Listeners) > 0:
		return o.Listeners, nil
	case o.Listen != "":
		return []security.Listener{{Name: security.Plaintext, Protocol: security.Plaintext, Bind: o.Listen, Advertise: o.Advertise}}, nil
	}
	ls, err := security.ParseListeners(o.Config)
	if err != nil {
		return nil, fmt.Errorf("sluice: %w", err)
	}
	if o.Advertise != "" {
		ls[0].Advertise = o.Advertise
	}
	return ls, nil
}

// bindListeners reads each listener's security set-up, binds it and works
// out its advertised address.
func (s *Server) bindListeners(b *Broker) error {
	o := &s.opts
	ls, err := s.configuredListeners()
	if err != nil {
		return err
	}
	b.listeners = make(map[string]*listenerState, len(ls))
	if b.authStats == nil && b.metrics != nil {
		b.authStats = b.metrics.RegisterAuth()
	}
	for i, l := range ls {
		name := strings.ToUpper(l.Name)
		if _, dup := b.listeners[name]; dup {
			return fmt.Errorf("sluice: listener %s given twice", name)
		}
		wl := &wire.Listener{Name: name, Protocol: l.Protocol}
		st := &listenerState{name: name, protocol: l.Protocol}
		switch l.Protocol {
		case security.Plaintext, security.SSL, security.SASLPlaintext, security.SASLSSL:
		default:
			return fmt.Errorf("sluice: listener %s: unknown security protocol %q", name, l.Protocol)
		}
		if l.TLS() {
			if wl.TLS, err = security.ServerTLS(o.Config, name); err != nil {
				return fmt.Errorf("sluice: listener %s: %w", name, err)
			}
		}
		if l.Protocol == security.SSL {
			if wl.MapPrincipal, err = security.PrincipalMapper(o.Config, name); err != nil {
				return fmt.Errorf("sluice: listener %s: %w", name, err)
			}
		}
		if l.SASL() {
			if st.sasl, err = security.ListenerSASLLog(o.Config, name, o.Logger); err != nil {
				return fmt.Errorf("sluice: listener %s: %w", name, err)
			}
			wl.SASL = true
			wl.OnSessionExpired = b.authStats.ExpiredClosed
			if v, ok := o.Config.ListenerValue(name, "sasl.server.max.receive.size"); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n > 0 {
					wl.MaxPreAuthBytes = int32(n)
				}
			}
		}
		lns, err := listen(l.Bind, o.Logger)
		if err != nil {
			return err
		}
		for _, ln := range lns {
			s.lns = append(s.lns, ln)
			s.lnsOf = append(s.lnsOf, wl)
		}
		host, port, err := advertised(l.Advertise, l.Bind, lns[0].Addr())
		if err != nil {
			return err
		}
		st.host, st.port = host, port
		if i == 0 {
			b.host, b.port = host, port
		}
		b.listeners[name] = st
	}
	return nil
}
