package broker

// With an authorizer, a node speaking on an SSL (mutual TLS) controller
// listener must be allowed CLUSTER_ACTION on the cluster, as Kafka's
// controller requires of the principal of every controller request: the
// subject of its certificate, mapped by the listener's
// ssl.principal.mapping.rules (the principal a client listener would give
// it), must be a super user or have an ACL. A trusted certificate alone
// is not enough: any certificate the same CA signed for a client would
// otherwise speak raft. The SASL controller listener checks the same rule
// for its user (cluster_peer_security.go).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/security"
)

// peerHandshakeTimeout bounds a connecting peer's TLS handshake.
const peerHandshakeTimeout = 10 * time.Second

// peerCertAuthorizer returns the check of an SSL controller listener's
// peers: nil error when the broker has no authorizer, or the peer's
// mapped certificate principal may CLUSTER_ACTION the cluster.
func (b *Broker) peerCertAuthorizer(listener string) (func(cs *tls.ConnectionState, host string) error, error) {
	mapper, err := security.PrincipalMapper(b.cfg, listener)
	if err != nil {
		return nil, fmt.Errorf("sluice: controller listener %s: %w", listener, err)
	}
	return func(cs *tls.ConnectionState, host string) error {
		if b.authz == nil {
			return nil
		}
		if len(cs.PeerCertificates) == 0 {
			return errors.New("no client certificate")
		}
		name := cs.PeerCertificates[0].Subject.String()
		if mapper != nil {
			if name, err = mapper(name); err != nil {
				return err
			}
		}
		d := b.authz.Decide(authz.Request{Principal: "User:" + name, Host: host}, authz.OpClusterAction,
			authz.ResourceCluster, authz.ClusterName)
		if !d.Allowed {
			return fmt.Errorf("User:%s is not allowed CLUSTER_ACTION on the cluster (%s): make it a super user", name, d.Reason)
		}
		return nil
	}, nil
}

// newPeerCertListener hands out only the connections of a TLS listener
// whose handshake succeeded and whose certificate authorize accepts; each
// handshake runs on its own goroutine (peer.CheckedListener), so a silent
// connection holds up nobody.
func newPeerCertListener(ln net.Listener, authorize func(*tls.ConnectionState, string) error, logger *slog.Logger) net.Listener {
	l := &peerCertListener{authorize: authorize}
	return peer.CheckedListener(ln, l.check, func(c net.Conn, err error) {
		if logger != nil {
			logger.Warn("controller listener: peer refused", "remote", c.RemoteAddr().String(), "err", err)
		}
	})
}

type peerCertListener struct {
	authorize func(cs *tls.ConnectionState, host string) error
}

func (l *peerCertListener) check(c net.Conn) error {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return errors.New("not a TLS connection")
	}
	ctx, cancel := context.WithTimeout(context.Background(), peerHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	host := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	cs := tc.ConnectionState()
	return l.authorize(&cs, host)
}
