package broker

// Inter-broker Kafka connections (replica fetchers): which listener of the
// other brokers they use and how they authenticate there, as Kafka does.
//
// The listener is inter.broker.listener.name, else the listener named by
// security.inter.broker.protocol (Kafka's rule: setting both is an error),
// else this broker's first listener (Sluice's default; Kafka's is the
// PLAINTEXT listener). The connection is secured as that listener is: with
// TLS, this broker's own ssl.* (listener.name.<l>.ssl.* first) key store is
// the client certificate and its trust store verifies the leader; with SASL,
// sasl.mechanism.inter.broker.protocol (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512) with the username and password of the listener's JAAS
// login module, or OAUTHBEARER with a token of the node's own
// (security.OAuthLogin: the token endpoint, or an unsecured token). The leader authorizes what the follower sends: with an
// authorizer, replica Fetch and OffsetForLeaderEpoch need ClusterAction on
// the cluster, which the broker's principal gets from super.users or an ACL.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/security"
)

// interBroker is how this broker reaches other brokers' Kafka listeners.
type interBroker struct {
	listener string         // upper case
	protocol string         // its security protocol
	tls      *tls.Config    // nil: plaintext
	mech     sasl.Mechanism // nil: no SASL
}

// interBrokerListenerName returns the inter-broker listener's name (upper
// case), "" for this broker's first listener.
func interBrokerListenerName(cfg *config.Broker) (string, error) {
	name := strings.ToUpper(strings.TrimSpace(cfg.Raw["inter.broker.listener.name"]))
	proto, protoSet := cfg.Raw["security.inter.broker.protocol"]
	proto = strings.ToUpper(strings.TrimSpace(proto))
	switch {
	case name != "" && protoSet:
		return "", fmt.Errorf("sluice: only one of inter.broker.listener.name and security.inter.broker.protocol should be set")
	case name != "":
		return name, nil
	case protoSet:
		return proto, nil
	}
	return "", nil
}

// newInterBroker reads the inter-broker listener's client side. Errors name
// the config at fault.
func newInterBroker(b *Broker, controllerListeners []string) (*interBroker, error) {
	name, err := interBrokerListenerName(b.cfg)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = b.listenerName(nil)
	}
	for _, cl := range controllerListeners {
		if strings.EqualFold(cl, name) {
			return nil, fmt.Errorf("sluice: the inter-broker listener %s is a controller listener (controller.listener.names); "+
				"brokers replicate over a broker listener", name)
		}
	}
	l, ok := b.listeners[name]
	if !ok {
		return nil, fmt.Errorf("sluice: inter.broker.listener.name (or security.inter.broker.protocol) names %s, "+
			"which is not a listener of this broker (listeners)", name)
	}
	ib := &interBroker{listener: name, protocol: l.protocol}
	if l.protocol == security.SSL || l.protocol == security.SASLSSL {
		tc, err := security.ClientTLS(b.cfg, name)
		if err != nil {
			return nil, fmt.Errorf("sluice: inter-broker listener %s: %w", name, err)
		}
		ib.tls = tc
	}
	if l.protocol == security.SASLPlaintext || l.protocol == security.SASLSSL {
		mech, _ := b.cfg.Value("sasl.mechanism.inter.broker.protocol")
		mech = strings.ToUpper(strings.TrimSpace(mech))
		var user, pass string
		var login *security.OAuthLogin
		var err error
		if mech == security.MechOAuthBearer {
			login, err = security.NewOAuthLogin(b.cfg, name) // the node's own token (security/oauth_login.go)
		} else {
			user, pass, err = security.ClientCredentials(b.cfg, name, mech)
		}
		if err != nil {
			return nil, fmt.Errorf("sluice: inter-broker listener %s (sasl.mechanism.inter.broker.protocol): %w", name, err)
		}
		if l.sasl != nil && !containsFold(l.sasl.Mechanisms, mech) {
			return nil, fmt.Errorf("sluice: sasl.mechanism.inter.broker.protocol %s is not in the sasl.enabled.mechanisms of listener %s",
				mech, name)
		}
		switch mech {
		case security.MechPlain:
			ib.mech = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case security.MechScramSHA256:
			ib.mech = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case security.MechScramSHA512:
			ib.mech = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		case security.MechOAuthBearer:
			ib.mech = oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
				tok, err := login.Token(ctx)
				return oauth.Auth{Token: tok}, err
			})
		}
	}
	return ib, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// addr is broker id's address on the inter-broker listener, "" when it has
// none (or is not registered).
func (ib *interBroker) addr(im *metadata.Image, id int32) string {
	reg, ok := im.Broker(id)
	if !ok {
		return ""
	}
	ep, ok := reg.Endpoint(ib.listener)
	if !ok {
		return ""
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
}
