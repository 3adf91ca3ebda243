package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/vfs"
	"github.com/sluice-broker/sluice/internal/wire"
)

// testOptions configure startTestBroker. The zero value is a default broker
// in a fresh temporary directory.
type testOptions struct {
	// Props are broker config properties (Kafka names), as in --config.
	Props map[string]string
	// DataDir reuses a directory (restarts); "" makes a fresh one.
	DataDir string
	// MetricsListen enables the metrics endpoint (use "127.0.0.1:0").
	MetricsListen string
	// Listeners replace the default PLAINTEXT listener (security_test.go);
	// tb.addr is the first one's address.
	Listeners []security.Listener
	// Quiet keeps broker logs out of the test log (they stay available via
	// tb.logs.text()); required for fuzz targets, whose F must not log from
	// inside the fuzz function.
	Quiet bool
	// FS replaces the OS filesystem (fault and blocking hooks).
	FS vfs.FS
	// Halt replaces the process exit of a fatal error (Options.Halt).
	Halt func(error)
}

// testBroker is a Server running in-process on 127.0.0.1 with a free port.
type testBroker struct {
	t    testing.TB
	opts testOptions
	srv  *Server
	addr string
	logs *testLogWriter
}

// startTestBroker starts a broker and stops it when the test ends. Data-path
// tests reuse it: tb.client() for kgo, tb.admin() for kadm, tb.restart() to
// check persistence, tb.raw() for byte-level requests.
func startTestBroker(t testing.TB, opts testOptions) *testBroker {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	// Kafka's 50 __consumer_offsets partitions make every start slow; tests
	// that care set it explicitly.
	// Streams groups are assigned at once unless a test sets Kafka's delays.
	props := map[string]string{"offsets.topic.num.partitions": "1",
		"group.streams.initial.rebalance.delay.ms": "0", "group.streams.assignment.interval.ms": "0"}
	for k, v := range opts.Props {
		props[k] = v
	}
	opts.Props = props
	tb := &testBroker{t: t, opts: opts, logs: &testLogWriter{t: t, finished: opts.Quiet}}
	tb.start()
	t.Cleanup(func() {
		tb.stop()
		tb.logs.done()
	})
	return tb
}

func (tb *testBroker) start() {
	tb.t.Helper()
	cfg, err := config.NewBroker(tb.opts.Props)
	if err != nil {
		tb.t.Fatalf("broker config: %v", err)
	}
	listen := "127.0.0.1:0"
	if len(tb.opts.Listeners) > 0 {
		listen = ""
	}
	tb.srv = NewServer(Options{
		Listen:          listen,
		Listeners:       tb.opts.Listeners,
		DataDir:         tb.opts.DataDir,
		MetricsListen:   tb.opts.MetricsListen,
		FS:              tb.opts.FS,
		Halt:            tb.opts.Halt,
		Config:          cfg,
		Logger:          slog.New(slog.NewTextHandler(tb.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version:         "test",
		ShutdownTimeout: 10 * time.Second,
	})
	if err := tb.srv.Start(); err != nil {
		tb.t.Fatalf("start broker: %v", err)
	}
	if a := tb.srv.Addr(); a != nil { // nil on a controller-only node
		tb.addr = a.String()
	}
}

func (tb *testBroker) stop() {
	if tb.srv != nil {
		if err := tb.srv.Close(); err != nil {
			tb.t.Errorf("close broker: %v", err)
		}
		tb.srv = nil
	}
}

// restart closes the broker and starts a new one on the same data directory
// (on a new port: clients made before must not be reused).
func (tb *testBroker) restart() {
	tb.t.Helper()
	tb.stop()
	tb.start()
}

// broker returns the running Broker (for white-box checks).
func (tb *testBroker) broker() *Broker { return tb.srv.Broker() }

// client returns a kgo client for this broker, closed at test end.
func (tb *testBroker) client(opts ...kgo.Opt) *kgo.Client {
	tb.t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(tb.addr), kgo.RetryTimeout(5 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		tb.t.Fatalf("kgo client: %v", err)
	}
	tb.t.Cleanup(cl.Close)
	return cl
}

// admin returns a kadm client for this broker, closed at test end.
func (tb *testBroker) admin() *kadm.Client {
	return kadm.NewClient(tb.client())
}

// request sends one request with a fresh kgo client and returns the
// response (the version is negotiated unless req has one pinned via
// kmsg's SetVersion and kgo.MaxVersions).
func (tb *testBroker) request(req kmsg.Request) kmsg.Response {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var opts []kgo.Opt
	if pr, ok := req.(*kmsg.ProduceRequest); ok && producesByName(pr) {
		// A produce request naming its topics by name goes at v12: v13
		// names them by id (produce_topic_id_test.go tests it).
		v := kversion.Tip()
		v.SetMaxKeyVersion(int16(kmsg.Produce), produceTopicIDVersion-1)
		opts = append(opts, kgo.MaxVersions(v))
	}
	resp, err := tb.client(opts...).Request(ctx, req)
	if err != nil {
		tb.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// producesByName reports a produce request with a topic named by name only.
func producesByName(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		if t.Topic != "" && t.TopicID == [16]byte{} {
			return true
		}
	}
	return false
}

// rawConn is a byte-level client connection for protocol tests.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

// raw dials the broker.
func (tb *testBroker) raw() *rawConn {
	tb.t.Helper()
	return dialRaw(tb.t, tb.addr)
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encodeRequest frames req (at its set version) with a request header.
func encodeRequest(req kmsg.Request, correlationID int32, clientID string) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if wire.RequestHeaderVersion(req.Key(), req.GetVersion()) == 2 {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// send writes one request.
func (rc *rawConn) send(req kmsg.Request, correlationID int32) {
	rc.t.Helper()
	rc.write(encodeRequest(req, correlationID, "raw-test"))
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	if _, err := rc.nc.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame; err is io.EOF (or similar) when the
// broker closed the connection.
func (rc *rawConn) readFrame() ([]byte, error) {
	return wire.ReadFrame(rc.br, 1<<30)
}

// recv reads one response into resp (whose version must be set) and returns
// its correlation id.
func (rc *rawConn) recv(resp kmsg.Response) int32 {
	rc.t.Helper()
	frame, err := rc.readFrame()
	if err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	if len(frame) < 4 {
		rc.t.Fatalf("short response frame: %d bytes", len(frame))
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	if wire.ResponseHeaderVersion(resp.Key(), resp.GetVersion()) == 1 {
		if len(body) == 0 || body[0] != 0 {
			rc.t.Fatalf("expected empty tagged fields in response header")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("decode %s: %v", kmsg.NameForKey(resp.Key()), err)
	}
	return corr
}

// expectClosed asserts the broker closes the connection.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	rc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := rc.readFrame()
	if err == nil {
		rc.t.Fatalf("expected the broker to close the connection, got a response")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		rc.t.Fatalf("connection still open after 10s")
	}
	if err != io.EOF && err != io.ErrUnexpectedEOF {
		rc.t.Logf("connection closed with %v", err)
	}
}

// testLogWriter sends broker logs to the test log until the test ends, and
// keeps them for assertions (text).
type testLogWriter struct {
	mu       sync.Mutex
	t        testing.TB
	finished bool
	buf      strings.Builder
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.finished {
		w.t.Log(string(p[:len(p)-1]))
	}
	if w.buf.Len() < 8<<20 {
		w.buf.Write(p)
	}
	return len(p), nil
}

// text returns everything logged so far.
func (w *testLogWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *testLogWriter) done() {
	w.mu.Lock()
	w.finished = true
	w.mu.Unlock()
}

// waitFor polls cond until it is true or the deadline passes. The deadline
// is generous (60 s) because the CI box has two loaded cores: elections,
// in-sync sets and coordinator loads can take seconds there; only a failing
// test ever waits that long.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// partitionLog is white-box access to a partition's log for tests (handlers
// go through b.partition).
func (b *Broker) partitionLog(topic string, partition int32) (*log.Log, *topics.Topic, int16) {
	if _, t, code := b.partition(topic, partition); code != 0 {
		return nil, nil, code
	} else {
		return b.logs.Get(topic, partition), t, 0
	}
}

// cappedRequest is a request kgo sends at no more than max (kgo negotiates
// the highest version both sides know otherwise).
type cappedRequest struct {
	kmsg.Request
	max int16
}

func (c cappedRequest) MaxVersion() int16 { return c.max }

// capVersion caps the version req is sent at (with kgo.Broker.Request).
func capVersion(req kmsg.Request, max int16) kmsg.Request { return cappedRequest{req, max} }
