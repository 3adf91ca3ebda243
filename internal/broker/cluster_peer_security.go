package broker

// How the controller listener is secured, as its security protocol in
// listener.security.protocol.map says (Kafka's names and settings):
//
//   - PLAINTEXT: nothing (a private network only);
//   - SSL: mutual TLS, every node presenting its certificate and verifying
//     the others' against its trust store (security.PeerTLS);
//   - SASL_PLAINTEXT and SASL_SSL: every connection authenticates with
//     sasl.mechanism.controller.protocol before it carries anything (raft
//     messages or the controller's requests; internal/peer/sasl.go). The
//     listener accepts the mechanisms of its sasl.enabled.mechanisms
//     (listener.name.<l>.sasl.enabled.mechanisms) with the users of its
//     PlainLoginModule (user_<name> options of
//     listener.name.<l>.plain.sasl.jaas.config), and this node connects
//     with the username and password options of the same login module, as
//     a Kafka controller does. With an authorizer, the user must be a super
//     user or be allowed CLUSTER_ACTION on the cluster (Kafka's rule for
//     the controllers' own requests). With SASL_SSL the connection is TLS
//     first (the listener's key store; ssl.client.auth as configured), then
//     SASL.
//
// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are taken; SCRAM's
// users are the metadata's, and a new cluster's those its data
// directories were formatted with (cluster_peer_scram.go); OAUTHBEARER
// tokens are checked by the listener's validator as on a client listener,
// and a node gets its own from the token endpoint or, for development, as
// an unsecured token (security.OAuthLogin).

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/security"
)

// peerSecurity is the controller listener's security, both sides.
type peerSecurity struct {
	serverTLS, clientTLS *tls.Config
	sasl                 *peer.SASLServer    // nil: no SASL
	clientOpts           []peer.ClientOption // WithSASL when SASL
	// certAuthorize checks an SSL listener's peers (cluster_peer_tls_authz.go).
	certAuthorize func(cs *tls.ConnectionState, host string) error
	logger        *slog.Logger
}

// newPeerSecurity reads the controller listener's security settings.
// Errors name the config at fault.
// SCRAM users are those of store's image, or boot while it has no cluster
// id (cluster_peer_scram.go).
func (b *Broker) newPeerSecurity(cc *clusterConfig, store *metadata.Store, boot map[string]map[string]security.ScramCredential) (peerSecurity, error) {
	var ps peerSecurity
	name := cc.peerListener
	var err error
	switch cc.peerProtocol {
	case security.Plaintext:
		if b.cfg.AuthorizerClassName != "" {
			b.logger.Warn("the controller listener is PLAINTEXT: the authorizer cannot tell the cluster's nodes from anyone "+
				"else there, so anyone who reaches it can speak raft; map it to SSL or SASL_PLAINTEXT/SASL_SSL (docs/cluster.md)",
				"listener", name)
		}
		return ps, nil
	case security.SSL:
		if ps.serverTLS, ps.clientTLS, err = security.PeerTLS(b.cfg, name); err != nil {
			return ps, fmt.Errorf("sluice: controller listener %s: %w", name, err)
		}
		if ps.certAuthorize, err = b.peerCertAuthorizer(name); err != nil {
			return ps, err
		}
		ps.logger = b.logger.With("component", "cluster")
		return ps, nil
	case security.SASLPlaintext:
	case security.SASLSSL:
		if ps.serverTLS, err = security.ServerTLS(b.cfg, name); err != nil {
			return ps, fmt.Errorf("sluice: controller listener %s: %w", name, err)
		}
		if ps.clientTLS, err = security.ClientTLS(b.cfg, name); err != nil {
			return ps, fmt.Errorf("sluice: controller listener %s: %w", name, err)
		}
	default:
		return ps, fmt.Errorf("sluice: controller listener %s is %s; Sluice's controller listener is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
			name, cc.peerProtocol)
	}
	sc, err := security.ListenerSASL(b.cfg, name)
	if err != nil {
		return ps, fmt.Errorf("sluice: controller listener %s: %w", name, err)
	}
	peerMech := func(m string) bool {
		return m == security.MechPlain || m == security.MechScramSHA256 || m == security.MechScramSHA512 || m == security.MechOAuthBearer
	}
	for _, m := range sc.Mechanisms {
		if !peerMech(m) {
			return ps, fmt.Errorf("sluice: controller listener %s enables %s; the controller listener takes PLAIN, SCRAM-SHA-256, "+
				"SCRAM-SHA-512 or OAUTHBEARER", name, m)
		}
	}
	mech, _ := b.cfg.Value("sasl.mechanism.controller.protocol")
	mech = strings.ToUpper(strings.TrimSpace(mech))
	if !peerMech(mech) {
		return ps, fmt.Errorf("sluice: sasl.mechanism.controller.protocol is %s; the SASL controller listener %s takes PLAIN, "+
			"SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mech, name)
	}
	var user, pass string
	var login *security.OAuthLogin
	if mech == security.MechOAuthBearer {
		login, err = security.NewOAuthLogin(b.cfg, name) // security/oauth_login.go
	} else {
		user, pass, err = security.ClientCredentials(b.cfg, name, mech)
	}
	if err != nil {
		return ps, fmt.Errorf("sluice: controller listener %s (sasl.mechanism.controller.protocol): %w", name, err)
	}
	if _, ok := sc.PlainUsers[user]; !ok && mech == security.MechPlain {
		b.logger.Warn("this node's own controller user is not among the users of its controller listener; other nodes must list it",
			"listener", name, "user", user)
	}
	ps.sasl = &peer.SASLServer{
		NewSession: func(m string) (peer.SASLSession, bool) {
			var scram *security.ScramStore
			if m != security.MechPlain {
				scram = controllerScram(store, boot) // cluster_peer_scram.go
			}
			s, ok := sc.NewSession(m, scram)
			if !ok {
				return nil, false
			}
			return s, true
		},
		Authorize: func(user, host string) error {
			if b.authz == nil {
				return nil
			}
			d := b.authz.Decide(authz.Request{Principal: "User:" + user, Host: host}, authz.OpClusterAction,
				authz.ResourceCluster, authz.ClusterName)
			if !d.Allowed {
				return fmt.Errorf("User:%s is not allowed CLUSTER_ACTION on the cluster (%s): make it a super user", user, d.Reason)
			}
			return nil
		},
		Logger: b.logger.With("component", "cluster"),
	}
	switch mech {
	case security.MechPlain:
		ps.clientOpts = append(ps.clientOpts, peer.WithSASL(plainMechanism{user: user, pass: pass}))
	case security.MechOAuthBearer:
		ps.clientOpts = append(ps.clientOpts, peer.WithSASL(oauthPeerMechanism{login: login}))
	default:
		ps.clientOpts = append(ps.clientOpts, peer.WithSASL(newScramPeerMechanism(mech, user, pass)))
	}
	return ps, nil
}

// listen wraps the controller listener's socket with its TLS and SASL.
func (ps peerSecurity) listen(ln net.Listener) net.Listener {
	if ps.serverTLS != nil {
		ln = tls.NewListener(ln, ps.serverTLS)
	}
	if ps.certAuthorize != nil {
		ln = newPeerCertListener(ln, ps.certAuthorize, ps.logger)
	}
	if ps.sasl != nil {
		ln = peer.SASLListener(ln, *ps.sasl)
	}
	return ln
}

// newPeerClient is a peer client secured as the controller listener.
func (c *clusterNode) newPeerClient(addrs map[uint64]string) *peer.Client {
	return peer.NewClient(addrs, c.sec.clientTLS, c.logger, c.sec.clientOpts...)
}

// plainMechanism is the client side of SASL PLAIN (RFC 4616).
type plainMechanism struct{ user, pass string }

func (plainMechanism) Name() string { return security.MechPlain }

func (m plainMechanism) Start(context.Context) ([]byte, func([]byte) (bool, []byte, error), error) {
	first := []byte("\x00" + m.user + "\x00" + m.pass)
	return first, func([]byte) (bool, []byte, error) { return true, nil, nil }, nil
}

// oauthPeerMechanism is the client side of SASL OAUTHBEARER (RFC 7628) on
// the controller listener, with the node's own token.
type oauthPeerMechanism struct{ login *security.OAuthLogin }

func (oauthPeerMechanism) Name() string { return security.MechOAuthBearer }

func (m oauthPeerMechanism) Start(ctx context.Context) ([]byte, func([]byte) (bool, []byte, error), error) {
	tok, err := m.login.Token(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OAUTHBEARER token of this node: %w", err)
	}
	first := []byte("n,,\x01auth=Bearer " + tok + "\x01\x01")
	return first, func([]byte) (bool, []byte, error) { return true, nil, nil }, nil
}
