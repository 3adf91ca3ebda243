package wire

import (
	"net"
	"testing"
	"time"
)

// TestConnStateReauthentication walks a SASL connection through Kafka's
// KIP-368 rules: no re-authentication without an expiry, at most one a
// second, the principal kept meanwhile, and expiry.
func TestConnStateReauthentication(t *testing.T) {
	st := newConnState(&Listener{Name: "SASL_PLAINTEXT", SASL: true}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	now := time.Unix(1_700_000_000, 0)
	if st.CanReauthenticate(now) || st.expired(now) {
		t.Fatal("unauthenticated connection can re-authenticate or is expired")
	}
	st.AuthenticatedSession("User:alice", "PLAIN", time.Time{})
	if st.CanReauthenticate(now) || st.expired(now.Add(time.Hour)) {
		t.Fatal("a session without expiry can re-authenticate or expires")
	}
	st.AuthenticatedSession("User:alice", "PLAIN", now.Add(10*time.Second))
	if !st.CanReauthenticate(now) || st.Mechanism() != "PLAIN" || !st.SessionExpiry().Equal(now.Add(10*time.Second)) {
		t.Fatal("an expiring session cannot re-authenticate")
	}
	st.BeginReauthenticate("session", now)
	if st.Phase() != SASLAuthenticate || !st.Reauthenticating() || st.Principal() != "User:alice" || st.Session() != "session" {
		t.Fatalf("during re-authentication: phase %v principal %s", st.Phase(), st.Principal())
	}
	if st.allows(0) || !st.allows(saslAuthenticateKey) || st.expired(now.Add(time.Hour)) {
		t.Fatal("during re-authentication only SaslAuthenticate is read, and the session does not expire")
	}
	st.AuthenticatedSession("User:alice", "PLAIN", now.Add(20*time.Second))
	if st.Reauthenticating() || st.Reauthentications() != 1 || st.Phase() != SASLDone {
		t.Fatal("re-authentication not recorded")
	}
	if st.CanReauthenticate(now.Add(999 * time.Millisecond)) {
		t.Fatal("a second re-authentication within a second")
	}
	if !st.CanReauthenticate(now.Add(MinReauthInterval)) {
		t.Fatal("no re-authentication a second later")
	}
	if st.expired(now.Add(20*time.Second-time.Nanosecond)) || !st.expired(now.Add(20*time.Second)) {
		t.Fatal("expiry")
	}
}
