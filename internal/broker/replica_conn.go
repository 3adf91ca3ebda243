package broker

// A replica fetcher's own connection to its leader.
//
// A general Kafka client allocates a new buffer for every response it reads.
// For a follower that is every Fetch answer (up to 16 MiB each, as it asked
// before it used Kafka's replica.fetch.* sizes): in a
// three-node cluster under acks=all produce those buffers were three quarters
// of the bytes a node allocated, and they set the pace of its garbage
// collector (which also emptied the server's frame pools, so produce frames
// were allocated anew too). This connection reads each answer into a buffer
// of the server's request frame pools and gives it back when the fetcher has
// appended what it holds. That is safe because a follower appends
// synchronously and the log keeps no reference to the bytes it appends (the
// guarantee that lets the server reuse produce frames).
//
// It speaks just what a fetcher needs: ApiVersions (each request goes at the
// highest version both sides know), SaslHandshake and SaslAuthenticate with
// the inter-broker mechanism (interbroker.go), then Fetch and
// OffsetForLeaderEpoch, one at a time. A SASL session with a lifetime
// (connections.max.reauth.ms, KIP-368) is not re-authenticated in place: the
// connection is replaced before the lifetime ends. Any error closes the
// connection; the next request dials again.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

// replicaDialTimeout bounds dialling, TLS and authentication together.
const replicaDialTimeout = 10 * time.Second

type replicaConn struct {
	ib        *interBroker
	addr      string
	fmt       *kmsg.RequestFormatter
	maxAnswer int32 // the largest answer read (fetchLimits.answerBytes)

	conn     net.Conn
	br       *bufio.Reader
	corr     int32
	versions map[int16]int16 // the leader's highest version by API key; nil before ApiVersions
	renewAt  time.Time       // replace the connection after this (SASL session lifetime); zero: never
	wbuf     []byte
}

func newReplicaConn(ib *interBroker, addr, clientID string, maxAnswer int32) *replicaConn {
	return &replicaConn{ib: ib, addr: addr, maxAnswer: maxAnswer, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
}

// close drops the connection (the next request dials again).
func (rc *replicaConn) close() {
	if rc.conn != nil {
		rc.conn.Close()
		rc.conn, rc.br, rc.versions = nil, nil, nil
	}
}

// request sends req and returns its answer. The answer's byte fields (a
// Fetch answer's record batches) point into frame, which the caller must
// Release when done with them. One request at a time.
func (rc *replicaConn) request(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, wire.PooledFrame, error) {
	if rc.conn != nil && !rc.renewAt.IsZero() && time.Now().After(rc.renewAt) {
		rc.close() // authenticate anew on a new connection before the session ends
	}
	if rc.conn == nil {
		if err := rc.connect(ctx); err != nil {
			return nil, wire.PooledFrame{}, err
		}
	}
	resp, frame, err := rc.roundTrip(ctx, req, timeout)
	if err != nil {
		rc.close()
	}
	return resp, frame, err
}

// requestSmall is request for answers without byte fields: the frame is
// given back at once.
func (rc *replicaConn) requestSmall(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	resp, frame, err := rc.request(ctx, req, timeout)
	frame.Release()
	return resp, err
}

func (rc *replicaConn) connect(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, replicaDialTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", rc.addr)
	if err != nil {
		return err
	}
	if rc.ib.tls != nil {
		cfg := rc.ib.tls.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(rc.addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			return fmt.Errorf("TLS handshake with %s: %w", rc.addr, err)
		}
		conn = tc
	}
	rc.conn, rc.br, rc.versions, rc.renewAt = conn, bufio.NewReaderSize(conn, 16<<10), nil, time.Time{}
	if err := rc.handshake(dctx); err != nil {
		rc.close()
		return err
	}
	return nil
}

// handshake learns the leader's versions and authenticates.
func (rc *replicaConn) handshake(ctx context.Context) error {
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "sluice-replica-fetcher", "1"
	r, err := rc.roundTripSmall(ctx, av)
	if err != nil {
		return fmt.Errorf("ApiVersions to %s: %w", rc.addr, err)
	}
	resp := r.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("ApiVersions to %s: %w", rc.addr, err)
	}
	rc.versions = make(map[int16]int16, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		rc.versions[k.ApiKey] = k.MaxVersion
	}
	if rc.ib.mech == nil {
		return nil
	}
	if err := rc.authenticate(ctx); err != nil {
		return fmt.Errorf("SASL %s with %s: %w", rc.ib.mech.Name(), rc.addr, err)
	}
	return nil
}

// authenticate runs SaslHandshake (v1, so that every token travels in a
// SaslAuthenticate request) and the mechanism's exchange.
func (rc *replicaConn) authenticate(ctx context.Context) error {
	mech := rc.ib.mech
	if rc.versions[kmsg.SASLHandshake.Int16()] < 1 {
		return errors.New("the leader does not support SaslHandshake v1")
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech.Name()
	r, err := rc.roundTripSmall(ctx, hs)
	if err != nil {
		return err
	}
	if hr := r.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return fmt.Errorf("%w (the leader offers %v)", kerr.ErrorForCode(hr.ErrorCode), hr.SupportedMechanisms)
	}
	host, _, _ := net.SplitHostPort(rc.addr)
	session, out, err := mech.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	start := time.Now()
	var lifetimeMs int64
	// As KIP-152 has it: every token the client writes gets an answer, and
	// the exchange ends when the mechanism is done and has nothing to send.
	for done := false; !done || len(out) > 0; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = out
		r, frame, err := rc.roundTrip(ctx, req, replicaDialTimeout)
		if err != nil {
			return err
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		challenge := bytes.Clone(ar.SASLAuthBytes)
		frame.Release()
		if ar.ErrorCode != 0 {
			msg := ""
			if ar.ErrorMessage != nil {
				msg = ": " + *ar.ErrorMessage
			}
			return fmt.Errorf("%w%s", kerr.ErrorForCode(ar.ErrorCode), msg)
		}
		lifetimeMs = ar.SessionLifetimeMillis
		out = nil
		if !done {
			if done, out, err = session.Challenge(challenge); err != nil {
				return err
			}
		}
	}
	if lifetimeMs > 0 {
		// Renew a tenth of the lifetime early, and short lifetimes at
		// half of it (or 5 s early), so that a request checked just before
		// renewAt reaches the leader well before the session ends.
		life := time.Duration(min(lifetimeMs, int64(365*24*time.Hour/time.Millisecond))) * time.Millisecond
		rc.renewAt = start.Add(life - max(life/10, min(5*time.Second, life/2)))
	}
	return nil
}

// roundTripSmall is a round trip of the connection's set-up, for answers
// without byte fields.
func (rc *replicaConn) roundTripSmall(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	r, frame, err := rc.roundTrip(ctx, req, replicaDialTimeout)
	frame.Release()
	return r, err
}

// roundTrip writes req and reads its answer on the open connection.
func (rc *replicaConn) roundTrip(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, wire.PooledFrame, error) {
	key := req.Key()
	if rc.versions != nil {
		max, ok := rc.versions[key]
		if !ok || max < 0 {
			return nil, wire.PooledFrame{}, fmt.Errorf("the leader at %s does not support %s", rc.addr, kmsg.NameForKey(key))
		}
		req.SetVersion(min(req.MaxVersion(), max))
	}
	rc.corr++
	corr := rc.corr
	rc.wbuf = rc.fmt.AppendRequest(rc.wbuf[:0], req, corr)
	conn := rc.conn
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, wire.PooledFrame{}, err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) (kmsg.Response, wire.PooledFrame, error) {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, wire.PooledFrame{}, err
	}
	if _, err := conn.Write(rc.wbuf); err != nil {
		return fail(err)
	}
	frame, err := wire.ReadPooledFrame(rc.br, rc.maxAnswer)
	if fse := (*wire.FrameSizeError)(nil); errors.As(err, &fse) {
		err = fmt.Errorf("%s answer of %d bytes is over the fetcher's limit of %d", kmsg.NameForKey(key), fse.Size, fse.Max)
	}
	if err != nil {
		return fail(err)
	}
	got, body, err := wire.ParseResponseHeader(key, req.GetVersion(), frame.Bytes())
	if err == nil && got != corr {
		err = fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	if err == nil {
		err = resp.ReadFrom(body)
	}
	if err != nil {
		frame.Release()
		return fail(fmt.Errorf("malformed %s answer: %w", kmsg.NameForKey(key), err))
	}
	return resp, frame, nil
}
