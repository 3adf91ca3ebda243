package security

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
)

// plainSession checks one SASL/PLAIN message (RFC 4616:
// [authzid] NUL authcid NUL passwd) against the listener's users, with
// Kafka's messages.
type plainSession struct {
	users map[string]string
	user  string
}

func (s *plainSession) Mechanism() string { return MechPlain }
func (s *plainSession) User() string      { return s.user }

func (s *plainSession) Step(token []byte) ([]byte, bool, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, false, &AuthError{Message: "Invalid SASL/PLAIN response: expected 3 tokens"}
	}
	authzid, user, password := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, &AuthError{Message: "Authentication failed: username not specified"}
	}
	if len(password) == 0 {
		return nil, false, &AuthError{Message: "Authentication failed: password not specified"}
	}
	want, ok := s.users[user]
	// Compare digests so the time taken does not depend on the length of
	// the stored password.
	a, b := sha256.Sum256(password), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 || !ok {
		return nil, false, &AuthError{Message: "Authentication failed: Invalid username or password", Detail: "user " + user}
	}
	if authzid != "" && authzid != user {
		return nil, false, &AuthError{Message: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	s.user = user
	return []byte{}, true, nil
}
