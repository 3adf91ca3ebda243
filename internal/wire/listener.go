package wire

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Security protocols, as Kafka names them.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// AnonymousPrincipal is the principal of an unauthenticated connection.
const AnonymousPrincipal = "User:ANONYMOUS"

// Request keys the wire layer lets through before SASL authentication.
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// DefaultTLSHandshakeTimeout bounds a TLS handshake when the Listener gives
// no timeout.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// Listener says how the connections accepted on one net.Listener are
// secured. The zero value (apart from Name) is a PLAINTEXT listener.
type Listener struct {
	// Name is the listener name (PLAINTEXT, SASL_SSL, INTERNAL, ...); handlers
	// see it in ConnState and answer with its advertised address.
	Name string
	// Protocol is one of the Protocol* constants ("" means PLAINTEXT).
	Protocol string
	// TLS, when set, wraps every connection in a TLS server handshake.
	TLS *tls.Config
	// TLSHandshakeTimeout bounds the TLS handshake (0: the default).
	TLSHandshakeTimeout time.Duration
	// SASL requires authentication: until a SaslAuthenticate exchange
	// completes, only ApiVersions and SaslHandshake (then SaslAuthenticate,
	// or raw tokens after a v0 handshake) are read; any other request
	// closes the connection, as Kafka does.
	SASL bool
	// MaxPreAuthBytes bounds request frames before SASL authentication
	// completes (sasl.server.max.receive.size); 0 means no extra bound.
	MaxPreAuthBytes int32
	// MapPrincipal, when set, maps the subject of a verified client
	// certificate on an SSL listener to the principal's name
	// (ssl.principal.mapping.rules); an error refuses the client (the
	// connection is closed after the handshake). Nil keeps the subject.
	MapPrincipal func(subject string) (string, error)
	// OnSessionExpired, when set, is called each time a connection is
	// closed because its SASL session expired (KIP-368; reauth.go).
	OnSessionExpired func()
}

// SASLPhase is where a connection is in its SASL exchange.
type SASLPhase int32

// SASL phases.
const (
	// SASLDone: authenticated, or a listener without SASL.
	SASLDone SASLPhase = iota
	// SASLHandshake: only ApiVersions and SaslHandshake are accepted.
	SASLHandshake
	// SASLAuthenticate: only SaslAuthenticate (or a raw token after a v0
	// handshake) is accepted.
	SASLAuthenticate
)

// ConnState is one connection's security state, shared by every request of
// the connection (Request.Conn). The SASL handlers move it along; the wire
// layer gates requests on it. Its methods are safe for concurrent use.
type ConnState struct {
	// Listener is the listener the connection came through (not nil).
	Listener *Listener
	// Remote is the client's address.
	Remote net.Addr
	// TLS is the negotiated TLS state, nil without TLS.
	TLS *tls.ConnectionState

	mutedUntil atomic.Int64 // unix nanos until which no request is read (throttle.go)

	mu         sync.Mutex
	principal  string
	phase      SASLPhase
	session    any
	raw        func(token []byte) ([]byte, error)
	closeAfter bool
	auth       authSession // mechanism, expiry, re-authentication (reauth.go)
}

func newConnState(l *Listener, remote net.Addr) *ConnState {
	st := &ConnState{Listener: l, Remote: remote, principal: AnonymousPrincipal}
	if l.SASL {
		st.phase = SASLHandshake
	}
	return st
}

// ListenerName returns the listener's name ("" for a nil state).
func (s *ConnState) ListenerName() string {
	if s == nil {
		return ""
	}
	return s.Listener.Name
}

// Protocol returns the security protocol (PLAINTEXT for a nil state).
func (s *ConnState) Protocol() string {
	if s == nil || s.Listener.Protocol == "" {
		return ProtocolPlaintext
	}
	return s.Listener.Protocol
}

// Principal returns the connection's principal in Kafka's "User:name" form:
// the SASL user once authenticated, the client certificate's subject on an
// SSL listener with a verified client certificate, else User:ANONYMOUS.
func (s *ConnState) Principal() string {
	if s == nil {
		return AnonymousPrincipal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.principal
}

// Phase returns the SASL phase.
func (s *ConnState) Phase() SASLPhase {
	if s == nil {
		return SASLDone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase
}

// BeginAuthenticate records a successful SaslHandshake: session is the
// handler's mechanism state (returned by Session). raw, when not nil, is the
// KIP-43 legacy mode of a v0 handshake: the next frames are bare SASL tokens
// (no request header), each passed to raw, whose reply is written back as
// a bare size-prefixed token; an error from raw closes the connection.
func (s *ConnState) BeginAuthenticate(session any, raw func(token []byte) ([]byte, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase, s.session, s.raw = SASLAuthenticate, session, raw
}

// Session returns the state given to BeginAuthenticate (nil if none).
func (s *ConnState) Session() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// Authenticated records a completed SASL exchange: principal (User:name) is
// the connection's from now on and every request is accepted.
func (s *ConnState) Authenticated(principal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.principal, s.phase, s.session, s.raw = principal, SASLDone, nil, nil
}

// CloseAfterResponse makes the connection close once the response of the
// request being handled is written; no further request is read. Handlers of
// non-concurrent keys call it (a failed authentication, as in Kafka).
func (s *ConnState) CloseAfterResponse() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeAfter = true
}

func (s *ConnState) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeAfter
}

func (s *ConnState) rawHandler() func([]byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != SASLAuthenticate {
		return nil
	}
	return s.raw
}

// allows reports whether a request with this key may be read now.
func (s *ConnState) allows(key int16) bool {
	switch s.Phase() {
	case SASLHandshake:
		return key == apiVersionsKey || key == saslHandshakeKey
	case SASLAuthenticate:
		return key == saslAuthenticateKey
	}
	return true
}

// frameLimit is the largest frame readable now.
func (s *ConnState) frameLimit(max int32) int32 {
	if s.Listener.MaxPreAuthBytes > 0 && s.Listener.MaxPreAuthBytes < max && s.Phase() != SASLDone {
		return s.Listener.MaxPreAuthBytes
	}
	return max
}

// certificatePrincipal is Kafka's default principal of a TLS client: the
// subject of its verified certificate (RFC 2253 form, as Java's
// X500Principal.getName prints it), or User:ANONYMOUS without one.
func certificatePrincipal(cs *tls.ConnectionState) string {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return AnonymousPrincipal
	}
	return "User:" + subjectName(cs.PeerCertificates[0])
}

func subjectName(c *x509.Certificate) string { return c.Subject.String() }
