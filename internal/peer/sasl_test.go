package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/sluice-broker/sluice/internal/security/sectest"
)

type nopRaft struct{}

func (nopRaft) Step(context.Context, *raftpb.Message) error { return nil }

// twoStep is a made-up mechanism of two round trips: the client sends its
// name, the server challenges with "nonce", the client answers
// "nonce:<secret>", the server ends with "ok".
type twoStep struct{ user, secret string }

func (twoStep) Name() string { return "TWO-STEP" }

func (m twoStep) Start(context.Context) ([]byte, func([]byte) (bool, []byte, error), error) {
	round := 0
	return []byte(m.user), func(server []byte) (bool, []byte, error) {
		round++
		switch {
		case round == 1 && string(server) == "nonce":
			return false, []byte("nonce:" + m.secret), nil
		case round == 2 && string(server) == "ok":
			return true, nil, nil
		}
		return false, nil, errors.New("unexpected server message " + string(server))
	}, nil
}

type twoStepSession struct {
	round int
	user  string
}

func (s *twoStepSession) User() string { return s.user }

func (s *twoStepSession) Step(tok []byte) ([]byte, bool, error) {
	s.round++
	if s.round == 1 {
		s.user = string(tok)
		return []byte("nonce"), false, nil
	}
	if string(tok) != "nonce:right" {
		return nil, false, errors.New("bad secret")
	}
	return []byte("ok"), true, nil
}

func startSASLServer(t *testing.T, authorize func(user, host string) error, serverTLS ...*tls.Config) string {
	t.Helper()
	var ln net.Listener
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if len(serverTLS) > 0 {
		ln = tls.NewListener(ln, serverTLS[0])
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := NewServer(nopRaft{}, quiet)
	s.SetStatus(func(asking uint64) Status { return Status{Node: 7, Commit: asking} })
	sl := SASLListener(ln, SASLServer{
		NewSession: func(m string) (SASLSession, bool) {
			if m != "TWO-STEP" {
				return nil, false
			}
			return &twoStepSession{}, true
		},
		Authorize: authorize,
		Logger:    quiet,
	})
	done := make(chan struct{})
	go func() { s.Serve(sl); close(done) }()
	t.Cleanup(func() { s.Close(); sl.Close(); <-done })
	return addr
}

// A connection authenticates over several round trips before it carries
// requests; a wrong secret, an unknown mechanism or an unauthorized user is
// refused with the server's reason; a silent connection does not hold up
// the others.
func TestSASLExchange(t *testing.T) {
	addr := startSASLServer(t, func(user, host string) error {
		if user == "mallory" {
			return errors.New("not allowed")
		}
		if host != "127.0.0.1" {
			return errors.New("host " + host)
		}
		return nil
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// A silent client holds a connection open during the whole test.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status := func(m SASLMechanism) (Status, error) {
		c := NewClient(nil, nil, quiet, WithSASL(m))
		defer c.Close()
		return c.PeerStatus(ctx, addr, 3)
	}
	if st, err := status(twoStep{user: "alice", secret: "right"}); err != nil || st.Node != 7 || st.Commit != 3 {
		t.Fatalf("right secret: %+v %v", st, err)
	}
	for _, c := range []struct {
		m    SASLMechanism
		want string
	}{
		{twoStep{user: "alice", secret: "wrong"}, "bad secret"},
		{twoStep{user: "mallory", secret: "right"}, "not allowed"},
		{otherMech{}, "not enabled"},
	} {
		_, err := status(c.m)
		var se *SASLError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want a refusal saying %q", c.m.Name(), err, c.want)
		}
	}
	// Without SASL the connection is closed.
	c := NewClient(nil, nil, quiet)
	defer c.Close()
	if _, err := c.PeerStatus(ctx, addr, 3); err == nil {
		t.Fatal("a connection without SASL was answered")
	}
}

type otherMech struct{}

func (otherMech) Name() string { return "OTHER" }
func (otherMech) Start(context.Context) ([]byte, func([]byte) (bool, []byte, error), error) {
	return nil, func([]byte) (bool, []byte, error) { return true, nil, nil }, nil
}

// SASL_SSL: TLS first, then the SASL exchange inside it.
func TestSASLOverTLS(t *testing.T) {
	ca := sectest.NewCA(t, "test-ca")
	srvTLS := &tls.Config{Certificates: []tls.Certificate{ca.Server(t, "node").TLSCertificate()}}
	addr := startSASLServer(t, nil, srvTLS)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	good := NewClient(nil, &tls.Config{RootCAs: ca.Pool()}, quiet, WithSASL(twoStep{user: "alice", secret: "right"}))
	defer good.Close()
	if st, err := good.PeerStatus(ctx, addr, 5); err != nil || st.Node != 7 {
		t.Fatalf("TLS and SASL: %+v %v", st, err)
	}
	bad := NewClient(nil, &tls.Config{RootCAs: ca.Pool()}, quiet, WithSASL(twoStep{user: "alice", secret: "wrong"}))
	defer bad.Close()
	var se *SASLError
	if _, err := bad.PeerStatus(ctx, addr, 5); !errors.As(err, &se) {
		t.Fatalf("TLS and a wrong secret: %v, want a SASL refusal", err)
	}
	plain := NewClient(nil, nil, quiet, WithSASL(twoStep{user: "alice", secret: "right"}))
	defer plain.Close()
	if _, err := plain.PeerStatus(ctx, addr, 5); err == nil {
		t.Fatal("SASL without TLS was answered by a TLS listener")
	}
}
