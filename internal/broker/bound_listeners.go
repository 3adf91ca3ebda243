package broker

import (
	"crypto/tls"
	"net"
	"slices"
)

// BoundListener describes one bound Kafka listener socket, for an in-process
// client of the broker's own listeners (the web console).
type BoundListener struct {
	Name     string   // listener name, upper case
	Protocol string   // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Addr     net.Addr // the bound address
	// Mechanisms are the SASL mechanisms enabled on the listener (nil
	// without SASL).
	Mechanisms []string
	// TLS is the listener's server TLS set-up (nil without TLS).
	TLS *tls.Config
}

// BoundListeners returns the Kafka listeners the server is bound to, in
// configuration order (a "localhost" listener appears once per address).
func (s *Server) BoundListeners() []BoundListener {
	var out []BoundListener
	for i, ln := range s.lns {
		wl := s.lnsOf[i]
		bl := BoundListener{Name: wl.Name, Protocol: wl.Protocol, Addr: ln.Addr(), TLS: wl.TLS}
		if bl.Protocol == "" {
			bl.Protocol = "PLAINTEXT"
		}
		if s.broker != nil {
			if st := s.broker.listeners[wl.Name]; st != nil && st.sasl != nil {
				bl.Mechanisms = slices.Clone(st.sasl.Mechanisms)
			}
		}
		out = append(out, bl)
	}
	return out
}
