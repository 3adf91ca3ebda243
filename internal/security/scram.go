package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// ScramMechanism is SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802, RFC 7677).
type ScramMechanism struct {
	Name string
	// Type is Kafka's wire code (AlterUserScramCredentials and
	// DescribeUserScramCredentials): 1 for SHA-256, 2 for SHA-512.
	Type int8
	hash func() hash.Hash
}

// The SCRAM mechanisms, with Kafka's iteration bounds.
var (
	ScramSHA256 = ScramMechanism{Name: MechScramSHA256, Type: 1, hash: sha256.New}
	ScramSHA512 = ScramMechanism{Name: MechScramSHA512, Type: 2, hash: sha512.New}
)

// Kafka's bounds on SCRAM iterations.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismByType returns the mechanism with Kafka's wire code t.
func ScramMechanismByType(t int8) (ScramMechanism, bool) {
	switch t {
	case 1:
		return ScramSHA256, true
	case 2:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

// ScramMechanismByName returns the mechanism named n.
func ScramMechanismByName(n string) (ScramMechanism, bool) {
	switch n {
	case MechScramSHA256:
		return ScramSHA256, true
	case MechScramSHA512:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

func (m ScramMechanism) hmac(key []byte, msg string) []byte {
	h := hmac.New(m.hash, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func (m ScramMechanism) digest(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// SaltedPassword is Hi(password, salt, iterations) (PBKDF2 with the
// mechanism's HMAC), what a client such as kafka-configs sends in
// AlterUserScramCredentials.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
}

// ScramCredential is what the broker keeps of a SCRAM password: never the
// password, nor the salted password.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int    `json:"iterations"`
}

// NewScramCredential derives the stored and server keys from a salted
// password.
func (m ScramMechanism) NewScramCredential(salt, saltedPassword []byte, iterations int) ScramCredential {
	clientKey := m.hmac(saltedPassword, "Client Key")
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.digest(clientKey),
		ServerKey:  m.hmac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}
}

// scramSession is the server side of one SCRAM exchange: client-first →
// server-first, client-final → server-final.
type scramSession struct {
	m     ScramMechanism
	store *ScramStore
	step  int

	user            string
	gs2Header       string
	nonce           string // client nonce + server nonce
	clientNonce     string
	clientFirstBare string
	serverFirst     string
	cred            ScramCredential
	unknown         bool // cred is made up: the user has none
}

func newScramSession(m ScramMechanism, store *ScramStore) *scramSession {
	return &scramSession{m: m, store: store}
}

func (s *scramSession) Mechanism() string { return s.m.Name }
func (s *scramSession) User() string      { return s.user }

// fail is Kafka's answer to a SCRAM failure: the client learns nothing
// about why (unknown user, wrong password, bad message).
func (s *scramSession) fail(detail string) error {
	return &AuthError{
		Message: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + s.m.Name,
		Detail:  detail,
	}
}

func (s *scramSession) Step(token []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		s.step = 1
		reply, err := s.clientFirst(string(token))
		return reply, false, err
	case 1:
		s.step = 2
		reply, err := s.clientFinal(string(token))
		return reply, err == nil, err
	}
	return nil, false, s.fail("unexpected message after the exchange")
}

func (s *scramSession) clientFirst(msg string) ([]byte, error) {
	// gs2-header: gs2-cbind-flag "," [ "a=" authzid ] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, s.fail("malformed client-first message")
	}
	switch flag {
	case "n", "y":
	default:
		return nil, s.fail("channel binding is not supported")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, s.fail("malformed client-first message")
	}
	if authz != "" && !strings.HasPrefix(authz, "a=") {
		return nil, s.fail("malformed authzid")
	}
	s.gs2Header = flag + "," + authz + ","
	s.clientFirstBare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, s.fail("malformed client-first-message-bare")
	}
	user, err := saslName(attrs[0][2:])
	if err != nil || user == "" {
		return nil, s.fail("malformed user name")
	}
	clientNonce := attrs[1][2:]
	if !printableNonce(clientNonce) {
		return nil, s.fail("malformed nonce")
	}
	for _, ext := range attrs[2:] {
		if ext == "tokenauth=true" {
			return nil, s.fail("delegation tokens are not supported")
		}
	}
	if authz != "" {
		az, err := saslName(authz[2:])
		if err != nil || az != user {
			return nil, &AuthError{Message: "Authentication failed: Client requested an authorization id that is different from username"}
		}
	}
	cred, ok := s.store.Lookup(user, s.m)
	if !ok {
		// RFC 5802 §5.1: answer an unknown user as a known one (a stable
		// made-up salt) and fail at the proof, so that a client cannot
		// tell which users exist.
		cred, s.unknown = unknownUserCredential(s.m, user), true
	}
	if cred.Iterations < ScramMinIterations {
		return nil, s.fail(fmt.Sprintf("iterations %d below the minimum %d", cred.Iterations, ScramMinIterations))
	}
	s.user, s.cred = user, cred
	var nb [24]byte
	rand.Read(nb[:])
	s.clientNonce = clientNonce
	s.nonce = clientNonce + base64.RawURLEncoding.EncodeToString(nb[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), nil
}

func (s *scramSession) clientFinal(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, s.fail("client-final message without proof")
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, s.fail("malformed client-final message")
	}
	cb, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cb) != s.gs2Header {
		return nil, s.fail("channel binding does not match the gs2 header")
	}
	if got := attrs[1][2:]; got != s.nonce && got != s.clientNonce+s.nonce {
		// The second form is what librdkafka before 2.6.1 sends (the client
		// nonce twice); Kafka 3.8.1-3.9 accepted it too, and Debian's kcat
		// still links such a librdkafka. The server nonce is in both.
		return nil, s.fail("invalid nonce in the client-final message")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, s.fail("malformed client proof")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	sig := s.m.hmac(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, sig)
	if subtle.ConstantTimeCompare(s.m.digest(clientKey), s.cred.StoredKey) != 1 || s.unknown {
		if s.unknown {
			return nil, s.fail("no " + s.m.Name + " credential for user " + s.user)
		}
		return nil, s.fail("invalid proof for user " + s.user)
	}
	serverSig := s.m.hmac(s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

// saslName decodes a SCRAM saslname: "=2C" is ',', "=3D" is '=', any other
// '=' is an error.
func saslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("invalid '=' escape in user name")
		}
		i += 2
	}
	return b.String(), nil
}

// printableNonce reports whether n is a SCRAM nonce: printable ASCII
// without ',' (RFC 5802), at least one character.
func printableNonce(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// unknownSecret keys the made-up credentials of unknown users: stable for
// the life of the process, so repeated probes of one name see one salt.
var unknownSecret = func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}()

// unknownUserCredential is a credential that no password matches, with a
// salt shaped like kafka-configs' (26 base-36 characters) and its default
// 4096 iterations.
func unknownUserCredential(m ScramMechanism, user string) ScramCredential {
	mac := hmac.New(sha256.New, unknownSecret)
	mac.Write([]byte(m.Name + "\x00" + user))
	sum := mac.Sum(nil)
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	salt := make([]byte, 26)
	for i := range salt {
		salt[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	stored := make([]byte, m.hash().Size())
	rand.Read(stored)
	return ScramCredential{Salt: salt, StoredKey: stored, ServerKey: stored, Iterations: ScramMinIterations}
}
