package wire

import (
	"time"
)

// Re-authentication (KIP-368). A SASL session may have an expiry: the
// broker's connections.max.reauth.ms, or the end of the credential's
// lifetime (an OAUTHBEARER token). Before it, the client re-authenticates on
// the same connection: a SaslHandshake (v1) with the same mechanism, then
// SaslAuthenticate, for the same principal. Those requests are barriers
// (conn.concurrent), so requests read before them finish first and their
// responses are written in order: nothing in flight is dropped. A
// connection whose session has expired and that sends any other request is
// closed, as Kafka closes it (the requests already read are answered).

// MinReauthInterval is the least time between two re-authentications of a
// connection, as in Kafka; a SaslHandshake sooner than that is answered as
// if re-authentication were off.
const MinReauthInterval = time.Second

// authSession is the SASL session of a connection (guarded by ConnState.mu).
type authSession struct {
	mechanism        string
	expiry           time.Time // zero: the session does not expire
	reauthStart      time.Time // the last re-authentication's start
	reauthenticating bool
	reauths          int
}

// AuthenticatedSession records a completed SASL exchange (first or
// re-authentication): the principal, the mechanism, and the session's end
// (zero: never).
func (s *ConnState) AuthenticatedSession(principal, mechanism string, expiry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.principal, s.phase, s.session, s.raw = principal, SASLDone, nil, nil
	if s.auth.reauthenticating {
		s.auth.reauths++
	}
	s.auth.mechanism, s.auth.expiry, s.auth.reauthenticating = mechanism, expiry, false
}

// Mechanism returns the SASL mechanism of the authenticated session ("" if
// none).
func (s *ConnState) Mechanism() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.mechanism
}

// SessionExpiry returns when the authenticated session ends (zero: never).
func (s *ConnState) SessionExpiry() time.Time {
	if s == nil {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.expiry
}

// Reauthentications returns how many re-authentications completed.
func (s *ConnState) Reauthentications() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.reauths
}

// Reauthenticating reports whether the exchange in progress is a
// re-authentication.
func (s *ConnState) Reauthenticating() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.reauthenticating
}

// CanReauthenticate reports whether a SaslHandshake now starts a
// re-authentication: the connection is authenticated, its session has an
// expiry, and the last re-authentication started at least
// MinReauthInterval ago (Kafka's rules).
func (s *ConnState) CanReauthenticate(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase == SASLDone && !s.auth.expiry.IsZero() && s.auth.mechanism != "" &&
		(s.auth.reauthStart.IsZero() || now.Sub(s.auth.reauthStart) >= MinReauthInterval)
}

// BeginReauthenticate starts a re-authentication with session (the
// handler's mechanism state): until it completes only SaslAuthenticate is
// read, and the connection keeps its principal.
func (s *ConnState) BeginReauthenticate(session any, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase, s.session, s.raw = SASLAuthenticate, session, nil
	s.auth.reauthenticating, s.auth.reauthStart = true, now
}

// expired reports whether the authenticated session has ended.
func (s *ConnState) expired(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase == SASLDone && !s.auth.expiry.IsZero() && !now.Before(s.auth.expiry)
}

// sessionExpired closes the connection (after the responses already queued)
// when its session has expired and key is not a SaslHandshake, which may
// start a re-authentication.
func (c *conn) sessionExpired(key int16, hdr RequestHeader) bool {
	if key == saslHandshakeKey || !c.st.expired(time.Now()) {
		return false
	}
	c.log.Info("closing connection: SASL session expired without re-authentication",
		"principal", c.st.Principal(), "mechanism", c.st.Mechanism(), "api_key", key, "client_id", hdr.ClientIDString())
	if f := c.st.Listener.OnSessionExpired; f != nil {
		f()
	}
	c.stopped = true
	return true
}
