package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/gopool"
)

const apiVersionsKey = 18

var (
	errClosing = errors.New("wire: connection closing")
	errIdle    = errors.New("wire: connection idle")
)

// conn is one client connection: a read loop that decodes and dispatches
// requests, and a write loop that writes responses in request order.
type conn struct {
	s      *Server
	nc     net.Conn
	st     *ConnState // listener, TLS state, principal, SASL phase
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan *pending // in request order; closed by the read loop

	inflight     sync.WaitGroup    // concurrent handlers running
	workers      *gopool.Pool[job] // run concurrent requests (runJob)
	active       atomic.Int32      // requests read but not yet answered
	lastActivity atomic.Int64      // unix nanos of the last byte read or written

	mu      sync.Mutex // guards closing and the read deadline
	closing bool

	refused bool // enqueue gave up because the connection is closing (read loop only)
	stopped bool // a handler asked to close after its response (read loop only)
}

// job is one concurrent request for a worker.
type job struct {
	p  *pending
	r  *Request
	fb *frameBuf
}

// maxIdleWorkers bounds the goroutines a connection keeps waiting for its
// next concurrent request, until the connection ends. Reusing a goroutine
// reuses its grown stack: a new goroutine per request grew and copied its
// stack on every small fetch (12 % of the CPU of BenchmarkFetchSmall went to
// runtime.copystack).
const maxIdleWorkers = 4

// pending is one request's slot in the response queue.
type pending struct {
	done    chan struct{} // closed when out/kill are final
	out     *Parts        // the encoded response frame (pooled); nil = no response
	kill    bool          // close the connection instead of answering
	key     int16
	version int16
	start   time.Time
	in      int
}

func newConn(s *Server, nc net.Conn, l *Listener) *conn {
	ctx, cancel := context.WithCancel(s.base)
	c := &conn{
		s: s, nc: nc, ctx: ctx, cancel: cancel,
		st:    newConnState(l, nc.RemoteAddr()),
		log:   s.log.With("remote", nc.RemoteAddr().String(), "listener", l.Name),
		queue: make(chan *pending, s.cfg.MaxInFlight),
	}
	c.workers = gopool.New(maxIdleWorkers, ctx.Done(), c.runJob)
	c.touch()
	return c
}

func (c *conn) touch() { c.lastActivity.Store(time.Now().UnixNano()) }

func (c *conn) serve() {
	c.s.obs.ConnOpened()
	defer c.s.obs.ConnClosed()
	if c.st.Listener.TLS != nil && !c.handshakeTLS() {
		c.cancel()
		c.nc.Close()
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	<-writerDone
	c.inflight.Wait()
	c.cancel()
	c.nc.Close()
}

// handshakeTLS replaces the socket by a TLS server connection and runs the
// handshake (bounded by the listener's timeout and by a shutdown); false
// means it failed and the connection must be closed.
func (c *conn) handshakeTLS() bool {
	timeout := c.st.Listener.TLSHandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultTLSHandshakeTimeout
	}
	tc := tls.Server(c.nc, c.st.Listener.TLS)
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.log.Info("closing connection: TLS handshake failed", "err", err)
		return false
	}
	cs := tc.ConnectionState()
	c.mu.Lock()
	c.nc = tc
	c.mu.Unlock()
	c.st.TLS = &cs
	if c.st.Listener.Protocol == ProtocolSSL {
		p := certificatePrincipal(&cs)
		if m := c.st.Listener.MapPrincipal; m != nil && p != AnonymousPrincipal {
			name, err := m(strings.TrimPrefix(p, "User:"))
			if err != nil {
				c.log.Info("closing connection: client certificate refused", "err", err)
				return false
			}
			p = "User:" + name
		}
		c.st.principal = p
	}
	c.touch()
	return true
}

// beginClose stops reading new requests; requests already read are answered.
func (c *conn) beginClose() {
	c.mu.Lock()
	c.closing = true
	c.nc.SetReadDeadline(time.Unix(1, 0))
	c.mu.Unlock()
}

// hardClose closes the connection now; unanswered requests are dropped.
func (c *conn) hardClose() {
	c.cancel()
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	nc.Close()
}

// Read implements io.Reader over the socket with the idle timeout: a read
// timeout closes the connection only if nothing happened for the idle period
// and no request is in flight.
func (c *conn) Read(p []byte) (int, error) {
	idle := c.s.cfg.IdleTimeout
	for {
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return 0, errClosing
		}
		if idle > 0 {
			c.nc.SetReadDeadline(time.Unix(0, c.lastActivity.Load()).Add(idle))
		}
		c.mu.Unlock()
		n, err := c.nc.Read(p)
		if n > 0 {
			c.touch()
			return n, err
		}
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() {
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			if closing {
				return 0, errClosing
			}
			if c.active.Load() > 0 {
				c.touch() // busy answering: not idle
				continue
			}
			if idle > 0 && time.Since(time.Unix(0, c.lastActivity.Load())) < idle {
				continue
			}
			return 0, errIdle
		}
		return n, err
	}
}

func (c *conn) readLoop() {
	defer close(c.queue)
	br := bufio.NewReaderSize(c, 16<<10)
	for {
		fb, err := readFramePooled(br, c.st.frameLimit(c.s.cfg.MaxRequestBytes))
		if err != nil {
			c.readFailed(err)
			return
		}
		if !c.waitUnmuted(c.ctx) { // a throttled client (throttle.go)
			fb.release()
			return
		}
		var ok bool
		if raw := c.st.rawHandler(); raw != nil {
			ok = c.rawToken(fb, raw)
		} else {
			ok = c.dispatch(fb)
		}
		if !ok {
			if c.refused || c.stopped {
				// Torn down while waiting for a queue slot (a graceful
				// shutdown), or closing after a response (a failed SASL
				// authentication): stop reading, but let the write loop
				// answer every request already queued.
				return
			}
			c.hardClose()
			return
		}
	}
}

func (c *conn) readFailed(err error) {
	var fse *FrameSizeError
	switch {
	case errors.As(err, &fse):
		bound := "socket.request.max.bytes"
		if fse.Max < c.s.cfg.MaxRequestBytes {
			bound = "sasl.server.max.receive.size" // before authentication
		}
		c.log.Warn("closing connection: request frame too large", "size", fse.Size, bound, fse.Max)
		c.hardClose()
	case errors.Is(err, errClosing):
		// Graceful shutdown: answer what was read, then close.
	case errors.Is(err, errIdle):
		c.log.Debug("closing idle connection", "connections.max.idle.ms", c.s.cfg.IdleTimeout.Milliseconds())
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		// Client went away or we closed the socket: answer nothing more
		// than what completes, and let long-polls return now.
		c.cancel()
	default:
		if c.ctx.Err() == nil {
			c.log.Debug("connection read failed", "err", err)
		}
		c.cancel()
	}
}

// releasesFrame reports whether the frame buffer of a request with this key
// goes back to the pool once its handler has returned. kmsg decoding copies
// strings but aliases []byte fields into the frame, so this is limited to
// the hot keys whose decoded requests nothing keeps: Fetch has no byte
// fields; Produce's records are copied into the segment file by the log's
// Append before the handler returns, and the Produce handler keeps no
// reference to them (Request.Body documents the rule). Other frames (group
// metadata, SASL tokens, …) are left to the garbage collector.
func releasesFrame(key int16) bool { return key == 0 || key == 1 }

// dispatch handles one frame; false means the connection must be closed.
// fb is released when the request's handler is done with it.
func (c *conn) dispatch(fb *frameBuf) bool {
	frame := fb.b
	if len(frame) < 2 || !releasesFrame(int16(binary.BigEndian.Uint16(frame))) {
		// Not pooled: the request may keep references. A mapped buffer
		// is not the collector's to free, so those bytes move to the heap.
		if fb.mapped {
			frame = append([]byte(nil), frame...)
			fb.release()
		}
		fb = nil
	}
	// Given back on every return, unless a concurrent job took it.
	defer func() { fb.release() }()
	received := time.Now()
	key, version, err := PeekKeyVersion(frame)
	if err != nil {
		c.log.Warn("closing connection: malformed request header", "err", err)
		return false
	}
	hdr, body, err := ParseRequestHeader(frame, RequestHeaderVersion(key, version))
	if err != nil {
		c.log.Warn("closing connection: malformed request header", "api_key", key, "api_version", version, "err", err)
		return false
	}
	if !c.st.allows(key) {
		c.log.Warn("closing connection: request not allowed before SASL authentication completes",
			"api_key", key, "api_version", version, "client_id", hdr.ClientIDString(), "sasl_phase", c.st.Phase())
		return false
	}
	if c.sessionExpired(key, hdr) {
		return false
	}
	min, max, ok := c.s.d.Versions(key)
	if key == apiVersionsKey && (!ok || version < min || version > max) {
		// KIP-511: answer with v0 so any client can read it.
		resp := &kmsg.ApiVersionsResponse{Version: 0, ErrorCode: 35} // UNSUPPORTED_VERSION
		if ok {
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: apiVersionsKey, MinVersion: min, MaxVersion: max}}
		}
		p := &pending{done: make(chan struct{}), key: key, version: version, start: received, in: len(frame)}
		p.out = encodeResponse(hdr.CorrelationID, resp)
		close(p.done)
		return c.enqueue(p)
	}
	req := kmsg.RequestForKey(key)
	if !ok || req == nil || version < min || version > max {
		c.log.Warn("closing connection: unsupported api key or version",
			"api_key", key, "api_version", version, "client_id", hdr.ClientIDString())
		return false
	}
	req.SetVersion(version)
	if err := req.ReadFrom(body); err != nil {
		c.log.Warn("closing connection: malformed request body",
			"api_key", key, "api_version", version, "client_id", hdr.ClientIDString(), "err", err)
		return false
	}
	p := &pending{done: make(chan struct{}), key: key, version: version, start: received, in: len(frame)}
	if !c.enqueue(p) {
		return false
	}
	r := &Request{Header: hdr, Body: req, Size: len(frame), Received: received, Remote: c.st.Remote, Conn: c.st}
	if c.concurrent(key) {
		c.inflight.Add(1)
		c.workers.Go(job{p: p, r: r, fb: fb})
		fb = nil // runJob releases it
	} else {
		c.inflight.Wait()
		c.run(p, r)
		if c.st.closing() {
			c.stopped = true
			return false
		}
	}
	return true
}

// runJob runs one concurrent request and counts it done even if its
// handler ends the goroutine.
func (c *conn) runJob(j job) {
	defer c.inflight.Done()
	c.run(j.p, j.r)
	j.fb.release()
}

// concurrent reports whether a request may run alongside its neighbours.
// The SASL requests, and every request before authentication completes,
// are barriers whatever the Dispatcher says: the next frame is read only
// once the SASL phase has moved on, so it is judged by that phase.
func (c *conn) concurrent(key int16) bool {
	if key == saslHandshakeKey || key == saslAuthenticateKey || c.st.Phase() != SASLDone {
		return false
	}
	return c.s.d.Concurrent(key)
}

// rawToken handles one bare SASL token frame (after a v0 SaslHandshake,
// KIP-43): the reply goes back as a bare size-prefixed token, in order
// after the responses already queued. false means stop reading: the
// exchange failed (the connection closes once queued responses are
// written) or the connection is being torn down.
func (c *conn) rawToken(fb *frameBuf, raw func([]byte) ([]byte, error)) bool {
	token := append([]byte(nil), fb.b...)
	fb.release()
	received := time.Now()
	c.inflight.Wait()
	reply, err := raw(token)
	if err != nil {
		c.log.Info("closing connection: SASL authentication failed", "err", err)
		c.stopped = true
		return false
	}
	p := &pending{done: make(chan struct{}), key: saslAuthenticateKey, start: received, in: len(token)}
	out := getParts()
	out.Buf = binary.BigEndian.AppendUint32(out.Buf, uint32(len(reply)))
	out.Buf = append(out.Buf, reply...)
	p.out = out
	close(p.done)
	if !c.enqueue(p) {
		out.release()
		return false
	}
	if c.st.closing() {
		c.stopped = true
		return false
	}
	return true
}

// enqueue reserves p's place in the response order. It blocks while
// MaxInFlight requests are unanswered, unless the connection is being torn
// down. (A free slot is always taken, even during a graceful shutdown, whose
// cancelled context must not drop a request that was already read.)
func (c *conn) enqueue(p *pending) bool {
	c.active.Add(1)
	select {
	case c.queue <- p:
		return true
	default:
	}
	select {
	case c.queue <- p:
		return true
	case <-c.ctx.Done():
		c.active.Add(-1)
		c.refused = true
		return false
	}
}

// run handles one request and fills its slot. A panic is recovered, logged,
// and closes this connection only. A *Deferred response is finished on its
// own goroutine: run returns at once, so the connection's next request can
// start while this one waits; its slot (and the response order) is kept.
func (c *conn) run(p *pending, r *Request) {
	deferred := false
	defer func() {
		if v := recover(); v != nil {
			c.panicked(p, r, v)
			deferred = false
		}
		if !deferred {
			close(p.done)
		}
	}()
	resp, err := c.s.d.Handle(c.ctx, r)
	if err != nil {
		c.requestFailed(p, r, err)
		return
	}
	if resp == nil {
		return
	}
	if d, ok := resp.(*Deferred); ok {
		deferred = true
		hdr := r.Header
		go c.finish(p, r, hdr, d)
		return
	}
	resp.SetVersion(r.Header.APIVersion)
	p.out = encodeResponse(r.Header.CorrelationID, resp)
}

// finish waits for a deferred response and fills its slot.
func (c *conn) finish(p *pending, r *Request, hdr RequestHeader, d *Deferred) {
	defer func() {
		if v := recover(); v != nil {
			c.panicked(p, r, v)
		}
		close(p.done)
	}()
	if err := d.Wait(); err != nil {
		c.requestFailed(p, r, err)
		return
	}
	if d.Response == nil {
		return
	}
	d.Response.SetVersion(hdr.APIVersion)
	p.out = encodeResponse(hdr.CorrelationID, d.Response)
}

func (c *conn) panicked(p *pending, r *Request, v any) {
	c.log.Error("handler panicked; closing connection",
		"api_key", r.Header.APIKey, "api_version", r.Header.APIVersion,
		"client_id", r.Header.ClientIDString(), "panic", v, "stack", string(debug.Stack()))
	p.out, p.kill = nil, true
	c.hardClose()
}

func (c *conn) requestFailed(p *pending, r *Request, err error) {
	c.log.Warn("closing connection: request failed",
		"api_key", r.Header.APIKey, "api_version", r.Header.APIVersion,
		"client_id", r.Header.ClientIDString(), "err", err)
	p.kill = true
}

func (c *conn) writeLoop() {
	dead := false
	for p := range c.queue {
		<-p.done
		c.active.Add(-1)
		out := p.out
		p.out = nil
		if dead {
			out.release()
			continue
		}
		if p.kill {
			out.release()
			dead = true
			c.hardClose()
			continue
		}
		var size int64
		if out != nil {
			size = out.Size()
			if t := c.s.cfg.IdleTimeout; t > 0 {
				c.nc.SetWriteDeadline(time.Now().Add(t))
			}
			_, err := writeParts(c.nc, out)
			out.release()
			if err != nil {
				// A failure mid-frame (socket error, or a segment file that
				// was closed or truncated under a file section) leaves the
				// client with a partial response: the connection must go.
				switch {
				case errors.Is(err, os.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF):
					c.log.Warn("closing connection: response file section unreadable", "api_key", p.key, "err", err)
				case c.ctx.Err() == nil:
					c.log.Debug("connection write failed", "err", err)
				}
				dead = true
				c.hardClose()
				continue
			}
			c.touch()
		}
		c.s.obs.RequestDone(p.key, p.version, time.Since(p.start), p.in, int(size))
	}
}
