package security

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// MechOAuthBearer is the SASL/OAUTHBEARER mechanism (RFC 7628, KIP-255).
const MechOAuthBearer = "OAUTHBEARER"

// Class names Kafka uses for OAUTHBEARER on the broker.
const (
	// OAuthBearerLoginModule is the JAAS login module of OAUTHBEARER; its
	// unsecuredValidator* options configure the unsecured validator.
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	// UnsecuredValidatorClass is Kafka's development validator: unsigned
	// ("alg":"none") tokens.
	UnsecuredValidatorClass = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
	// JWKSValidatorClass validates signed JWTs against a JWKS.
	JWKSValidatorClass = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	// jwksValidatorClassOld is its Kafka 3.1–3.9 name.
	jwksValidatorClassOld = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)

// OAuthToken is a validated bearer token.
type OAuthToken struct {
	// Principal is the principal name (the sub claim, or the configured one).
	Principal string
	// Expiry is when the token expires (its exp claim).
	Expiry time.Time
	// Scope is the token's scope (may be empty).
	Scope []string
}

// OAuthError is a token that failed validation. Status (invalid_token or
// insufficient_scope) and Scope go to the client in RFC 7628's error JSON;
// Reason only to the log.
type OAuthError struct {
	Status string
	Scope  string
	Reason string
}

func (e *OAuthError) Error() string { return e.Status + ": " + e.Reason }

// TokenValidator checks a bearer token. A failure is an *OAuthError.
type TokenValidator interface {
	Validate(token string) (*OAuthToken, error)
}

// ExpiringSession is a Session whose credential expires (OAUTHBEARER): the
// broker ends the session no later than CredentialExpiry (KIP-368).
type ExpiringSession interface {
	Session
	CredentialExpiry() time.Time
}

// genericOAuthFailure is what the client is told when its first message
// cannot be parsed (Kafka does not echo the parser's reason either).
const genericOAuthFailure = "Authentication failed during authentication due to invalid credentials with SASL mechanism " + MechOAuthBearer

// oauthSession is the server side of one OAUTHBEARER exchange: the client's
// first message (RFC 7628 §3.1, with Kafka's SASL extensions as key=value
// pairs), then either success, or the error JSON as a challenge that the
// client acknowledges with a lone 0x01, after which the exchange fails with
// that JSON as the message, as Kafka does.
type oauthSession struct {
	v          TokenValidator
	errJSON    string // the error challenge sent; "" before
	user       string
	expiry     time.Time
	extensions map[string]string
}

func newOAuthSession(v TokenValidator) *oauthSession { return &oauthSession{v: v} }

func (s *oauthSession) Mechanism() string           { return MechOAuthBearer }
func (s *oauthSession) User() string                { return s.user }
func (s *oauthSession) CredentialExpiry() time.Time { return s.expiry }

// Extensions returns the client's SASL extensions (after done).
func (s *oauthSession) Extensions() map[string]string { return s.extensions }

func (s *oauthSession) Step(msg []byte) ([]byte, bool, error) {
	if s.errJSON != "" {
		if len(msg) == 1 && msg[0] == 0x01 {
			return nil, false, &AuthError{Message: s.errJSON}
		}
		return nil, false, &AuthError{Message: genericOAuthFailure, Detail: "expected the client's 0x01 after the error challenge"}
	}
	first, err := parseOAuthFirstMessage(msg)
	if err != nil {
		return nil, false, &AuthError{Message: genericOAuthFailure, Detail: err.Error()}
	}
	tok, err := s.v.Validate(first.token)
	if err != nil {
		oe, ok := err.(*OAuthError)
		if !ok {
			oe = &OAuthError{Status: "invalid_token", Reason: err.Error()}
		}
		s.errJSON = oauthErrorJSON(oe)
		// Not done, no error: the client answers the challenge with 0x01.
		return []byte(s.errJSON), false, nil
	}
	if first.authzid != "" && first.authzid != tok.Principal {
		return nil, false, &AuthError{Message: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) "+
			"that is different from the token's principal name (%s)", first.authzid, tok.Principal)}
	}
	s.user, s.expiry, s.extensions = tok.Principal, tok.Expiry, first.extensions
	return []byte{}, true, nil
}

// oauthErrorJSON renders RFC 7628's server error message.
func oauthErrorJSON(e *OAuthError) string {
	m := struct {
		Status string `json:"status"`
		Scope  string `json:"scope,omitempty"`
	}{e.Status, e.Scope}
	b, _ := json.Marshal(m)
	return string(b)
}

type oauthFirstMessage struct {
	authzid    string
	token      string
	extensions map[string]string
}

var (
	oauthSASLName  = regexp.MustCompile(`^(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+$`)
	oauthKey       = regexp.MustCompile(`^[A-Za-z]+$`)
	oauthValue     = regexp.MustCompile(`^[\x21-\x7E \t\r\n]+$`)
	oauthAuthValue = regexp.MustCompile(`^([A-Za-z0-9_]+) +([-_.a-zA-Z0-9]+)$`)
)

// parseOAuthFirstMessage parses "n,[a=<authzid>],\x01key=value\x01...\x01\x01"
// with the grammar Kafka accepts: keys are letters, values printable ASCII,
// an "auth" pair "Bearer <token>" is required (the scheme in any case), and
// the other pairs are SASL extensions.
func parseOAuthFirstMessage(msg []byte) (*oauthFirstMessage, error) {
	s := string(msg)
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return nil, fmt.Errorf("invalid OAUTHBEARER client first message: no 'n,' GS2 header")
	}
	gs2, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("invalid OAUTHBEARER client first message: unterminated GS2 header")
	}
	out := &oauthFirstMessage{extensions: map[string]string{}}
	if gs2 != "" {
		name, ok := strings.CutPrefix(gs2, "a=")
		if !ok || !oauthSASLName.MatchString(name) {
			return nil, fmt.Errorf("invalid OAUTHBEARER client first message: bad authorization id")
		}
		out.authzid = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(name)
	}
	if !strings.HasPrefix(rest, "\x01") || !strings.HasSuffix(rest, "\x01\x01") || len(rest) < 3 {
		return nil, fmt.Errorf("invalid OAUTHBEARER client first message: bad separators")
	}
	pairs := strings.Split(rest[1:len(rest)-2], "\x01")
	auth := ""
	seenAuth := false
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !oauthKey.MatchString(k) || !oauthValue.MatchString(v) {
			return nil, fmt.Errorf("invalid OAUTHBEARER client first message: bad key=value pair")
		}
		if k == "auth" {
			auth, seenAuth = v, true
			continue
		}
		out.extensions[k] = v
	}
	if !seenAuth {
		return nil, fmt.Errorf("invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	m := oauthAuthValue.FindStringSubmatch(auth)
	if m == nil {
		return nil, fmt.Errorf("invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(m[1], "bearer") {
		return nil, fmt.Errorf("invalid scheme in OAUTHBEARER client first message: %s", m[1])
	}
	out.token = m[2]
	return out, nil
}
