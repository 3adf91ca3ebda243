// SaslAuthenticate (key 36), v0–v2.
//
// Carries the tokens of the exchange chosen by a v1 SaslHandshake. A
// completed exchange makes the connection's principal User:<name> and
// lets every request through. SessionLifetimeMs (v1+) is the session's
// lifetime (KIP-368, sasl_reauth.go): connections.max.reauth.ms, capped at
// an OAUTHBEARER token's expiry; 0 when the session does not expire. As in
// Kafka:
//   - a failed exchange answers SASL_AUTHENTICATION_FAILED (58) with a
//     message (PLAIN says why; SCRAM does not reveal whether the user
//     exists) and closes the connection after the response;
//   - on a listener without SASL, or after authentication, it gets
//     ILLEGAL_SASL_STATE (34) and the connection stays open;
//   - before a SaslHandshake the wire layer closes the connection.

package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.SASLAuthenticate, (*Broker).handleSASLAuthenticate) }

func (b *Broker) handleSASLAuthenticate(_ context.Context, r *wire.Request, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	st := r.Conn
	l := b.listener(r)
	if st == nil || l == nil || l.sasl == nil || st.Phase() == wire.SASLDone {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
		return resp, nil
	}
	sess, ok := st.Session().(security.Session)
	if !ok {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received before SaslHandshake")
		st.CloseAfterResponse()
		return resp, nil
	}
	reply, done, err := sess.Step(req.SASLAuthBytes)
	if err != nil {
		b.authFailed(r, l, sess, err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed"
		var ae *security.AuthError
		if errors.As(err, &ae) {
			msg = ae.Message
		}
		resp.ErrorMessage = &msg
		st.CloseAfterResponse()
		return resp, nil
	}
	if reply == nil {
		reply = []byte{}
	}
	resp.SASLAuthBytes = reply
	if done {
		lifetime, err := b.authenticated(r, l, sess)
		if err != nil {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr(err.Error())
			resp.SASLAuthBytes = nil
			st.CloseAfterResponse()
			return resp, nil
		}
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
	}
	return resp, nil
}
