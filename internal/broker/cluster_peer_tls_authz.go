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
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/authz"
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

// peerCertListener hands out only the connections of a TLS listener whose
// handshake succeeded and whose certificate authorize accepts; each
// handshake runs on its own goroutine, so a silent connection holds up
// nobody.
type peerCertListener struct {
	net.Listener // a tls.NewListener
	authorize    func(cs *tls.ConnectionState, host string) error
	logger       *slog.Logger
	conns        chan net.Conn
	done         chan struct{}
	once         sync.Once
	err          error // the accept error that ended the loop (read after done)
}

func newPeerCertListener(ln net.Listener, authorize func(*tls.ConnectionState, string) error, logger *slog.Logger) net.Listener {
	l := &peerCertListener{Listener: ln, authorize: authorize, logger: logger,
		conns: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *peerCertListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			l.err = err
			l.once.Do(func() { close(l.done) })
			return
		}
		go func() {
			if err := l.check(c); err != nil {
				if l.logger != nil {
					l.logger.Warn("controller listener: peer refused", "remote", c.RemoteAddr().String(), "err", err)
				}
				c.Close()
				return
			}
			select {
			case l.conns <- c:
			case <-l.done:
				c.Close()
			}
		}()
	}
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

func (l *peerCertListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

func (l *peerCertListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}
