package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/security/sectest"
)

// saslDispatcher is a toy SASL server: mechanism "TOY" is accepted; the
// token "good" authenticates as User:bob, anything else fails. Metadata
// records the connection's listener and principal.
type saslDispatcher struct {
	mu        sync.Mutex
	principal string
	listener  string
	protocol  string
}

func (d *saslDispatcher) Versions(key int16) (int16, int16, bool) {
	switch key {
	case 18:
		return 0, 4, true
	case 3:
		return 0, 12, true
	case 17:
		return 0, 1, true
	case 36:
		return 0, 2, true
	}
	return 0, 0, false
}

func (d *saslDispatcher) Concurrent(key int16) bool { return key == 3 || key == 18 }

func toyStep(st *ConnState, token []byte) error {
	if string(token) != "good" {
		return errors.New("bad token")
	}
	st.Authenticated("User:bob")
	return nil
}

func (d *saslDispatcher) Handle(_ context.Context, r *Request) (kmsg.Response, error) {
	switch req := r.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		return req.ResponseKind(), nil
	case *kmsg.SASLHandshakeRequest:
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		if req.Mechanism != "TOY" {
			resp.ErrorCode = 33
			r.Conn.CloseAfterResponse()
			return resp, nil
		}
		var raw func([]byte) ([]byte, error)
		if req.Version == 0 {
			raw = func(tok []byte) ([]byte, error) {
				if err := toyStep(r.Conn, tok); err != nil {
					return nil, err
				}
				return []byte("welcome"), nil
			}
		}
		r.Conn.BeginAuthenticate("toy", raw)
		return resp, nil
	case *kmsg.SASLAuthenticateRequest:
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if r.Conn.Session() != "toy" {
			resp.ErrorCode = 34
			return resp, nil
		}
		if err := toyStep(r.Conn, req.SASLAuthBytes); err != nil {
			resp.ErrorCode = 58
			r.Conn.CloseAfterResponse()
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		d.mu.Lock()
		d.principal, d.listener, d.protocol = r.Conn.Principal(), r.Conn.ListenerName(), r.Conn.Protocol()
		d.mu.Unlock()
		return req.ResponseKind(), nil
	}
	return nil, errors.New("unexpected request")
}

func (d *saslDispatcher) seen() (string, string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.principal, d.listener, d.protocol
}

func startListener(t *testing.T, d Dispatcher, l *Listener) (string, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	s := NewServer(d, Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ln, l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
	})
	return ln.Addr().String(), logs
}

// roundTrip sends req (a non-flexible version) and decodes the response.
func (c *client) roundTrip(req kmsg.Request, corr int32) (kmsg.Response, error) {
	c.t.Helper()
	c.send(req, corr)
	got, body, err := c.recv(0)
	if err != nil {
		return nil, err
	}
	if got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

func handshakeReq(version int16, mech string) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = version, mech
	return r
}

func authReq(token string) *kmsg.SASLAuthenticateRequest {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.Version, r.SASLAuthBytes = 1, []byte(token)
	return r
}

func metadataReq() *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 1
	return r
}

func TestSASLGate(t *testing.T) {
	d := &saslDispatcher{}
	addr, logs := startListener(t, d, &Listener{Name: "SASL_PLAINTEXT", Protocol: ProtocolSASLPlaintext, SASL: true, MaxPreAuthBytes: 1024})

	t.Run("request before handshake closes", func(t *testing.T) {
		c := dial(t, addr)
		c.apiVersionsWorks()
		c.send(metadataReq(), 1)
		c.expectClosed()
		if !strings.Contains(logs.String(), "not allowed before SASL authentication") {
			t.Errorf("no log line: %s", logs)
		}
	})
	t.Run("authenticate before handshake closes", func(t *testing.T) {
		c := dial(t, addr)
		c.send(authReq("good"), 1)
		c.expectClosed()
	})
	t.Run("request between handshake and authenticate closes", func(t *testing.T) {
		c := dial(t, addr)
		if resp, err := c.roundTrip(handshakeReq(1, "TOY"), 1); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("handshake: %v %+v", err, resp)
		}
		c.send(metadataReq(), 2)
		c.expectClosed()
	})
	t.Run("v1 success", func(t *testing.T) {
		c := dial(t, addr)
		c.apiVersionsWorks()
		if resp, err := c.roundTrip(handshakeReq(1, "TOY"), 1); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("handshake: %v %+v", err, resp)
		}
		if resp, err := c.roundTrip(authReq("good"), 2); err != nil || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
			t.Fatalf("authenticate: %v %+v", err, resp)
		}
		if _, err := c.roundTrip(metadataReq(), 3); err != nil {
			t.Fatal(err)
		}
		if p, l, proto := d.seen(); p != "User:bob" || l != "SASL_PLAINTEXT" || proto != ProtocolSASLPlaintext {
			t.Errorf("seen %q %q %q", p, l, proto)
		}
		// A frame above the pre-authentication bound is fine now.
		big := metadataReq()
		for i := 0; i < 200; i++ {
			big.Topics = append(big.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr("topic-name-long")})
		}
		if _, err := c.roundTrip(big, 4); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("v1 failure answers then closes", func(t *testing.T) {
		c := dial(t, addr)
		c.roundTrip(handshakeReq(1, "TOY"), 1)
		resp, err := c.roundTrip(authReq("bad"), 2)
		if err != nil || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 58 {
			t.Fatalf("authenticate: %v %+v", err, resp)
		}
		c.expectClosed()
	})
	t.Run("unsupported mechanism answers then closes", func(t *testing.T) {
		c := dial(t, addr)
		resp, err := c.roundTrip(handshakeReq(1, "NOPE"), 1)
		if err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 33 {
			t.Fatalf("handshake: %v %+v", err, resp)
		}
		c.expectClosed()
	})
	t.Run("v0 raw tokens", func(t *testing.T) {
		c := dial(t, addr)
		if resp, err := c.roundTrip(handshakeReq(0, "TOY"), 1); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("handshake: %v %+v", err, resp)
		}
		c.nc.Write([]byte{0, 0, 0, 4, 'g', 'o', 'o', 'd'})
		reply, err := ReadFrame(c.br, 1024)
		if err != nil || string(reply) != "welcome" {
			t.Fatalf("raw reply %q %v", reply, err)
		}
		if _, err := c.roundTrip(metadataReq(), 2); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("v0 raw bad token closes", func(t *testing.T) {
		c := dial(t, addr)
		c.roundTrip(handshakeReq(0, "TOY"), 1)
		c.nc.Write([]byte{0, 0, 0, 3, 'b', 'a', 'd'})
		c.expectClosed()
	})
	t.Run("large frame before authentication closes", func(t *testing.T) {
		c := dial(t, addr)
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, int32(4096))
		b.Write(make([]byte, 4096))
		c.nc.Write(b.Bytes())
		c.expectClosed()
	})
}

func TestTLSListener(t *testing.T) {
	ca := sectest.NewCA(t, "ca")
	srv := ca.Server(t, "broker")
	alice := ca.Client(t, pkix.Name{CommonName: "alice", Organization: []string{"Acme"}})
	d := &saslDispatcher{}
	addr, logs := startListener(t, d, &Listener{Name: "SSL", Protocol: ProtocolSSL, TLS: &tls.Config{
		Certificates: []tls.Certificate{srv.TLSCertificate()},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    ca.Pool(),
	}})
	dialTLS := func(cc *tls.Config) *client {
		t.Helper()
		nc, err := tls.Dial("tcp", addr, cc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
	}

	c := dialTLS(sectest.ClientTLS(ca, alice))
	if _, err := c.roundTrip(metadataReq(), 1); err != nil {
		t.Fatal(err)
	}
	if p, l, proto := d.seen(); p != "User:CN=alice,O=Acme" || l != "SSL" || proto != ProtocolSSL {
		t.Errorf("with certificate: %q %q %q", p, l, proto)
	}
	c = dialTLS(sectest.ClientTLS(ca, nil))
	if _, err := c.roundTrip(metadataReq(), 1); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := d.seen(); p != AnonymousPrincipal {
		t.Errorf("without certificate: %q", p)
	}
	// A plaintext client fails the handshake: closed, logged, no panic.
	p := dial(t, addr)
	p.send(metadataReq(), 1)
	p.expectClosed()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "TLS handshake failed") {
		if time.Now().After(deadline) {
			t.Fatalf("no handshake failure logged:\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allConcurrent marks every key concurrent, SASL ones included: the wire
// layer must still run the SASL exchange as barriers.
type allConcurrent struct{ *saslDispatcher }

func (allConcurrent) Concurrent(int16) bool { return true }

// TestSASLGatePipelined sends whole exchanges in one write: frames after
// the handshake are judged by the phase the handshake leaves, never by the
// phase at the time they arrived, and nothing but ApiVersions, SaslHandshake
// and SaslAuthenticate reaches the dispatcher before authentication.
func TestSASLGatePipelined(t *testing.T) {
	apiv := kmsg.NewPtrApiVersionsRequest()
	apiv.Version = 3
	apiv.ClientSoftwareName, apiv.ClientSoftwareVersion = "t", "1"
	rawFrame := func(tok string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, concurrent := range []bool{false, true} {
		start := func(t *testing.T) (*saslDispatcher, string) {
			d := &saslDispatcher{}
			var disp Dispatcher = d
			if concurrent {
				disp = allConcurrent{d}
			}
			addr, _ := startListener(t, disp, &Listener{Name: "SASL_PLAINTEXT", Protocol: ProtocolSASLPlaintext, SASL: true, MaxPreAuthBytes: 1024})
			return d, addr
		}
		name := "barriers"
		if concurrent {
			name = "all concurrent"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("v1 exchange in one write", func(t *testing.T) {
				d, addr := start(t)
				c := dial(t, addr)
				c.nc.Write(cat(frameRequest(apiv, 1), frameRequest(handshakeReq(1, "TOY"), 2),
					frameRequest(authReq("good"), 3), frameRequest(metadataReq(), 4)))
				for corr := int32(1); corr <= 4; corr++ {
					got, _, err := c.recv(0)
					if err != nil || got != corr {
						t.Fatalf("response %d: corr %d, %v", corr, got, err)
					}
				}
				if p, _, _ := d.seen(); p != "User:bob" {
					t.Fatalf("Metadata ran as %q", p)
				}
			})
			t.Run("metadata right after the handshake", func(t *testing.T) {
				d, addr := start(t)
				c := dial(t, addr)
				c.nc.Write(cat(frameRequest(handshakeReq(1, "TOY"), 1), frameRequest(metadataReq(), 2), frameRequest(authReq("good"), 3)))
				for {
					if _, _, err := c.recv(0); err != nil {
						break
					}
				}
				if p, _, _ := d.seen(); p != "" {
					t.Fatalf("Metadata ran as %q", p)
				}
			})
			t.Run("metadata after a failed authentication", func(t *testing.T) {
				d, addr := start(t)
				c := dial(t, addr)
				c.nc.Write(cat(frameRequest(handshakeReq(1, "TOY"), 1), frameRequest(authReq("bad"), 2), frameRequest(metadataReq(), 3)))
				for {
					if _, _, err := c.recv(0); err != nil {
						break
					}
				}
				if p, _, _ := d.seen(); p != "" {
					t.Fatalf("Metadata ran as %q", p)
				}
			})
			t.Run("v0 raw token in one write", func(t *testing.T) {
				d, addr := start(t)
				c := dial(t, addr)
				c.nc.Write(cat(frameRequest(handshakeReq(0, "TOY"), 1), rawFrame("bad"), frameRequest(metadataReq(), 2)))
				for {
					if _, _, err := c.recv(0); err != nil {
						break
					}
				}
				if p, _, _ := d.seen(); p != "" {
					t.Fatalf("Metadata ran as %q after a bad raw token", p)
				}
				c = dial(t, addr)
				c.nc.Write(cat(frameRequest(handshakeReq(0, "TOY"), 1), rawFrame("good"), frameRequest(metadataReq(), 2)))
				if got, _, err := c.recv(0); err != nil || got != 1 {
					t.Fatalf("handshake: %d %v", got, err)
				}
				if reply, err := ReadFrame(c.br, 1024); err != nil || string(reply) != "welcome" {
					t.Fatalf("raw reply %q %v", reply, err)
				}
				if got, _, err := c.recv(0); err != nil || got != 2 {
					t.Fatalf("metadata: %d %v", got, err)
				}
				if p, _, _ := d.seen(); p != "User:bob" {
					t.Fatalf("Metadata ran as %q", p)
				}
			})
		})
	}
}
