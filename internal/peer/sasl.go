package peer

// SASL on the peer listener: every connection authenticates once, right
// after it is opened (and after TLS, with SASL_SSL), before any HTTP
// request travels on it, as a Kafka connection authenticates before its
// first request. The exchange is framed as 4-byte big-endian lengths
// followed by bytes:
//
//	client → server  mechanism name
//	client → server  token                 (repeated)
//	server → client  status byte + data    (after each token)
//
// status 0: a challenge (data) the client answers with its next token;
// 1: authenticated (data: the server's last message, which the client's
// mechanism checks); 2: refused (data: why). A refused or silent connection
// is closed. The mechanisms themselves (PLAIN, SCRAM) are the caller's.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// maxSASLFrame bounds one frame of the exchange.
const maxSASLFrame = 64 << 10

// saslTimeout bounds a whole exchange.
const saslTimeout = 10 * time.Second

const (
	saslContinue byte = iota
	saslDone
	saslFailed
)

// SASLSession is the server side of one exchange.
type SASLSession interface {
	// Step takes the client's next token and returns the reply; done once
	// the client is authenticated; an error refuses it.
	Step(token []byte) (reply []byte, done bool, err error)
	// User is the authenticated user (after done).
	User() string
}

// SASLServer says how the peer listener authenticates connections.
type SASLServer struct {
	// NewSession starts mechanism's server side (false: not enabled).
	NewSession func(mechanism string) (SASLSession, bool)
	// Authorize, when set, decides whether an authenticated user, from
	// host (an IP address), may speak on the listener (nil error: yes).
	Authorize func(user, host string) error
	Logger    *slog.Logger
}

// SASLMechanism is the client side of one mechanism.
type SASLMechanism interface {
	Name() string
	// Start returns the first token and the function that answers each
	// server message: done when the exchange is complete on the client's
	// side, else the next token.
	Start(ctx context.Context) (first []byte, step func(server []byte) (done bool, next []byte, err error), err error)
}

func writeFrame(w io.Writer, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	buf := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(buf, uint32(n))
	for _, p := range parts {
		buf = append(buf, p...)
	}
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > maxSASLFrame {
		return nil, fmt.Errorf("SASL frame of %d bytes (at most %d)", n, maxSASLFrame)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// SASLListener returns a listener whose Accept yields only connections
// that completed the exchange s describes. Exchanges run concurrently, so
// a slow or silent client holds up nobody else.
func SASLListener(ln net.Listener, s SASLServer) net.Listener {
	sl := &saslListener{s: s}
	return CheckedListener(ln, sl.authenticate, func(c net.Conn, err error) {
		if s.Logger != nil {
			s.Logger.Warn("controller listener: SASL authentication failed", "remote", c.RemoteAddr().String(), "err", err)
		}
	})
}

// saslListener runs the server side of the exchange on each connection.
type saslListener struct{ s SASLServer }

func (l *saslListener) authenticate(c net.Conn) error {
	c.SetDeadline(time.Now().Add(saslTimeout))
	defer c.SetDeadline(time.Time{})
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
	}
	mech, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("reading the mechanism: %w", err)
	}
	sess, ok := l.s.NewSession(string(mech))
	if !ok {
		msg := fmt.Sprintf("mechanism %q is not enabled on this listener", mech)
		writeFrame(c, []byte{saslFailed}, []byte(msg))
		return errors.New(msg)
	}
	for {
		tok, err := readFrame(c)
		if err != nil {
			return fmt.Errorf("reading a token: %w", err)
		}
		reply, done, err := sess.Step(tok)
		if err != nil {
			writeFrame(c, []byte{saslFailed}, []byte("authentication failed: "+err.Error()))
			return err
		}
		if !done {
			if err := writeFrame(c, []byte{saslContinue}, reply); err != nil {
				return err
			}
			continue
		}
		if l.s.Authorize != nil {
			host := c.RemoteAddr().String()
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if err := l.s.Authorize(sess.User(), host); err != nil {
				writeFrame(c, []byte{saslFailed}, []byte(err.Error()))
				return fmt.Errorf("user %s: %w", sess.User(), err)
			}
		}
		return writeFrame(c, []byte{saslDone}, reply)
	}
}

// SASLError is a refusal by the other side's listener.
type SASLError struct{ Message string }

func (e *SASLError) Error() string { return "SASL authentication refused: " + e.Message }

// clientAuthenticate runs the client side of the exchange on c.
func clientAuthenticate(ctx context.Context, c net.Conn, m SASLMechanism) error {
	deadline := time.Now().Add(saslTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	first, step, err := m.Start(ctx)
	if err != nil {
		return err
	}
	if err := writeFrame(c, []byte(m.Name())); err != nil {
		return err
	}
	tok := first
	for {
		if err := writeFrame(c, tok); err != nil {
			return err
		}
		resp, err := readFrame(c)
		if err != nil {
			return fmt.Errorf("SASL %s: reading the server's answer: %w", m.Name(), err)
		}
		if len(resp) == 0 {
			return fmt.Errorf("SASL %s: empty answer", m.Name())
		}
		status, data := resp[0], resp[1:]
		if status == saslFailed {
			return &SASLError{Message: string(data)}
		}
		done, next, err := step(data)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", m.Name(), err)
		}
		switch {
		case status == saslDone && done:
			return nil
		case status == saslDone:
			return fmt.Errorf("SASL %s: the server ended the exchange early", m.Name())
		case done:
			return fmt.Errorf("SASL %s: the server wants more than the mechanism sends", m.Name())
		}
		tok = next
	}
}

// ClientOption changes how a Client connects.
type ClientOption func(*http.Transport)

// WithSASL makes every connection authenticate with m (after TLS, if any).
func WithSASL(m SASLMechanism) ClientOption {
	return func(tr *http.Transport) {
		dialer := &net.Dialer{Timeout: 2 * time.Second}
		tc := tr.TLSClientConfig
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := clientAuthenticate(ctx, c, m); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
		if tc == nil {
			return
		}
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			cfg := tc.Clone()
			if cfg.ServerName == "" {
				if host, _, err := net.SplitHostPort(addr); err == nil {
					cfg.ServerName = host
				}
			}
			c := tls.Client(raw, cfg)
			if err := c.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			if err := clientAuthenticate(ctx, c, m); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
	}
}
