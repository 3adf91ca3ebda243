// SaslHandshake (key 17), v0–v1.
//
// After authentication, on a connection whose session expires (KIP-368), a
// v1 SaslHandshake starts a re-authentication (sasl_reauth.go).
//
// On a SASL_PLAINTEXT or SASL_SSL listener, before authentication, it picks
// the mechanism of the exchange (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
// OAUTHBEARER, as sasl.enabled.mechanisms allows on that listener) and
// answers with the enabled mechanisms. After v1 the tokens come in SaslAuthenticate
// requests; after v0 (KIP-43, old clients) they come as bare size-prefixed
// frames, which the wire layer hands to the session (wire.ConnState).
// As in Kafka:
//   - a mechanism not enabled gets UNSUPPORTED_SASL_MECHANISM (33) with the
//     enabled list, and the connection closes after the response;
//   - on a listener without SASL, or after authentication, it gets
//     ILLEGAL_SASL_STATE (34) and the connection stays open.
//
// It is a barrier (not concurrent): the wire layer reads the next frame
// only after the SASL phase has moved on.

package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.SASLHandshake, (*Broker).handleSASLHandshake) }

func (b *Broker) handleSASLHandshake(_ context.Context, r *wire.Request, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	st := r.Conn
	l := b.listener(r)
	if st != nil && l != nil && l.sasl != nil && req.Version >= 1 && st.CanReauthenticate(time.Now()) {
		return b.reauthHandshake(r, l, req, resp), nil // sasl_reauth.go
	}
	if st == nil || l == nil || l.sasl == nil || st.Phase() != wire.SASLHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = l.sasl.Mechanisms
	sess, ok := l.sasl.NewSession(req.Mechanism, b.scram)
	if !ok {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		b.logger.Info("failed authentication: unsupported SASL mechanism", "remote", r.Remote, "listener", l.name,
			"mechanism", req.Mechanism, "enabled", l.sasl.Mechanisms, "client_id", r.Header.ClientIDString())
		st.CloseAfterResponse()
		return resp, nil
	}
	var raw func([]byte) ([]byte, error)
	if req.Version == 0 {
		raw = func(token []byte) ([]byte, error) {
			reply, done, err := sess.Step(token)
			if err != nil {
				b.authFailed(r, l, sess, err)
				return nil, err
			}
			if done {
				if _, err := b.authenticated(r, l, sess); err != nil {
					return nil, err
				}
			}
			return reply, nil
		}
	}
	st.BeginAuthenticate(sess, raw)
	return resp, nil
}
