// SASL sessions and re-authentication (KIP-368).
//
// A completed SASL exchange gets a session lifetime, computed as Kafka does:
// connections.max.reauth.ms for the mechanism (listener.name.<l>.<mech>.,
// listener.name.<l>., or the broker's), and for OAUTHBEARER the token's
// remaining lifetime, whichever is shorter; 0 (no expiry) when neither
// applies. SaslAuthenticate v1+ tells the client, which re-authenticates on
// the same connection before the end: a v1 SaslHandshake with the same
// mechanism, then SaslAuthenticate, for the same principal. As in Kafka:
//   - re-authentication is possible only on a session that expires, and at
//     most once a second; otherwise the SaslHandshake gets
//     ILLEGAL_SASL_STATE and the connection stays open;
//   - another mechanism gets UNSUPPORTED_SASL_MECHANISM, a failed exchange
//     or another principal SASL_AUTHENTICATION_FAILED ("Cannot change
//     principals during re-authentication ..."); the connection closes after
//     the response;
//   - a connection whose session expired is closed at its next request
//     other than SaslHandshake (the wire layer, wire/reauth.go).
//
// Requests read before the re-authentication finish and are answered in
// order (the SASL requests are barriers); the connection keeps its
// principal throughout.

package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/wire"
)

// reauthHandshake answers a SaslHandshake that starts a re-authentication.
func (b *Broker) reauthHandshake(r *wire.Request, l *listenerState, req *kmsg.SASLHandshakeRequest,
	resp *kmsg.SASLHandshakeResponse) *kmsg.SASLHandshakeResponse {
	st := r.Conn
	resp.SupportedMechanisms = l.sasl.Mechanisms
	prev := st.Mechanism()
	if req.Mechanism != prev {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		b.logger.Info("failed re-authentication", "remote", r.Remote, "listener", l.name, "principal", st.Principal(),
			"err", fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
				req.Mechanism, prev), "client_id", r.Header.ClientIDString())
		b.authStats.Authenticated(prev, true, false)
		st.CloseAfterResponse()
		return resp
	}
	sess, ok := l.sasl.NewSession(req.Mechanism, b.scram)
	if !ok { // the listener's mechanisms are fixed at start-up: cannot happen
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		st.CloseAfterResponse()
		return resp
	}
	st.BeginReauthenticate(sess, time.Now())
	b.logger.Debug("re-authentication started", "remote", r.Remote, "listener", l.name, "principal", st.Principal(),
		"mechanism", prev, "client_id", r.Header.ClientIDString())
	return resp
}

// authenticated records a completed exchange on the connection and returns
// the session lifetime (0: none). A re-authentication as another principal
// is an error (the exchange fails).
func (b *Broker) authenticated(r *wire.Request, l *listenerState, sess security.Session) (time.Duration, error) {
	st := r.Conn
	principal := "User:" + sess.User()
	reauth := st.Reauthenticating()
	if reauth && principal != st.Principal() {
		err := fmt.Errorf("Cannot change principals during re-authentication from %s: %s",
			dotted(st.Principal()), dotted(principal))
		b.authFailed(r, l, sess, err)
		return 0, err
	}
	now := time.Now()
	lifetime := sessionLifetime(now, l.sasl.MaxReauth[sess.Mechanism()], sess)
	var expiry time.Time
	if lifetime >= 0 {
		expiry = now.Add(lifetime)
	} else {
		lifetime = 0
	}
	st.AuthenticatedSession(principal, sess.Mechanism(), expiry)
	b.authStats.Authenticated(sess.Mechanism(), reauth, true)
	what := "authenticated"
	if reauth {
		what = "re-authenticated"
	}
	b.logger.Debug(what, "remote", r.Remote, "listener", l.name, "mechanism", sess.Mechanism(),
		"principal", principal, "session_lifetime_ms", lifetime.Milliseconds(), "client_id", r.Header.ClientIDString())
	return lifetime, nil
}

// sessionLifetime is Kafka's: the smaller of maxReauth (0: unset) and the
// credential's remaining lifetime (OAUTHBEARER), never negative; -1 when
// neither applies (the session does not expire).
func sessionLifetime(now time.Time, maxReauth time.Duration, sess security.Session) time.Duration {
	var credential time.Duration
	hasCredential := false
	if es, ok := sess.(security.ExpiringSession); ok && !es.CredentialExpiry().IsZero() {
		credential, hasCredential = es.CredentialExpiry().Sub(now), true
	}
	switch {
	case !hasCredential && maxReauth <= 0:
		return -1
	case !hasCredential:
		return maxReauth
	case maxReauth <= 0:
		return max(credential, 0)
	default:
		return max(min(credential, maxReauth), 0)
	}
}

// dotted writes a principal as Kafka's message does: User.alice.
func dotted(principal string) string {
	return strings.Replace(principal, ":", ".", 1)
}

// authFailed logs a failed exchange as Kafka does (at INFO, with the
// reason the client is not told) and counts it.
func (b *Broker) authFailed(r *wire.Request, l *listenerState, sess security.Session, err error) {
	what := "failed authentication"
	reauth := r.Conn.Reauthenticating()
	if reauth {
		what = "failed re-authentication"
	}
	b.authStats.Authenticated(sess.Mechanism(), reauth, false)
	b.logger.Info(what, "remote", r.Remote, "listener", l.name, "mechanism", sess.Mechanism(),
		"principal", r.Conn.Principal(), "client_id", r.Header.ClientIDString(), "err", err)
}
