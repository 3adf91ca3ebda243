package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeDispatcher serves ApiVersions (0–4), Metadata (0–12, concurrent, with
// an optional delay per request), CreateTopics (2–7, barrier) and
// DeleteTopics (1–6, panics).
type fakeDispatcher struct {
	metadataDelay     func(n int) time.Duration
	mdCount           atomic.Int32
	running           atomic.Int32 // concurrently running handlers
	maxRunning        atomic.Int32
	barrierSawRunning atomic.Bool
	block             chan struct{} // if non-nil, Metadata waits on it or ctx
}

func (d *fakeDispatcher) Versions(key int16) (int16, int16, bool) {
	switch key {
	case 18:
		return 0, 4, true
	case 3:
		return 0, 12, true
	case 19:
		return 2, 7, true
	case 20:
		return 1, 6, true
	}
	return 0, 0, false
}

func (d *fakeDispatcher) Concurrent(key int16) bool { return key == 3 || key == 18 }

func (d *fakeDispatcher) Handle(ctx context.Context, r *Request) (kmsg.Response, error) {
	n := d.running.Add(1)
	defer d.running.Add(-1)
	for {
		m := d.maxRunning.Load()
		if n <= m || d.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	switch req := r.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
		return resp, nil
	case *kmsg.MetadataRequest:
		i := int(d.mdCount.Add(1))
		if d.block != nil {
			select {
			case <-d.block:
			case <-ctx.Done():
			}
		}
		if d.metadataDelay != nil {
			time.Sleep(d.metadataDelay(i)) // simulated work, not synchronisation
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = int32(i)
		return resp, nil
	case *kmsg.CreateTopicsRequest:
		if n > 1 {
			d.barrierSawRunning.Store(true)
		}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		if len(req.Topics) == 1 && req.Topics[0].Topic == "no-response" {
			return nil, nil
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		panic("boom")
	}
	return nil, errors.New("unexpected request")
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startServer(t *testing.T, d Dispatcher, cfg Config) (*Server, string, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := NewServer(d, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("serve returned %v", err)
		}
	})
	return s, ln.Addr().String(), logs
}

type client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func frameRequest(req kmsg.Request, corr int32) []byte {
	b := make([]byte, 4)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if RequestHeaderVersion(req.Key(), req.GetVersion()) == 2 {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *client) send(req kmsg.Request, corr int32) {
	c.t.Helper()
	if _, err := c.nc.Write(frameRequest(req, corr)); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads a response frame, returning the correlation id and body
// (after the response header of the given version).
func (c *client) recv(headerVersion int8) (int32, []byte, error) {
	f, err := ReadFrame(c.br, 1<<30)
	if err != nil {
		return 0, nil, err
	}
	corr := int32(binary.BigEndian.Uint32(f))
	f = f[4:]
	if headerVersion == 1 {
		if len(f) == 0 || f[0] != 0 {
			return 0, nil, errors.New("bad response header tags")
		}
		f = f[1:]
	}
	return corr, f, nil
}

func (c *client) expectClosed() {
	c.t.Helper()
	_, _, err := c.recv(0)
	if err == nil {
		c.t.Fatal("expected connection to be closed")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection not closed before the deadline")
	}
}

func (c *client) apiVersionsWorks() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	c.send(req, 99)
	corr, body, err := c.recv(0)
	if err != nil || corr != 99 {
		c.t.Fatalf("api versions: corr %d err %v", corr, err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 {
		c.t.Fatalf("api versions response: %v code %d", err, resp.ErrorCode)
	}
}

func TestParseRequestHeader(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	f := frameRequest(req, 42)[4:]
	h, body, err := ParseRequestHeader(f, 2)
	if err != nil || h.APIKey != 3 || h.APIVersion != 12 || h.CorrelationID != 42 || h.ClientIDString() != "test" {
		t.Fatalf("%+v %v", h, err)
	}
	got := kmsg.NewPtrMetadataRequest()
	got.Version = 12
	if err := got.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	// Null client id, header v1.
	b := []byte{0, 3, 0, 1, 0, 0, 0, 7, 0xff, 0xff}
	h, body, err = ParseRequestHeader(b, 1)
	if err != nil || h.ClientID != nil || len(body) != 0 {
		t.Fatalf("null client id: %+v %v", h, err)
	}
	// Tagged fields in header v2 are skipped.
	b = []byte{0, 3, 0, 12, 0, 0, 0, 7, 0, 1, 'x', 2, 0, 3, 'a', 'b', 'c', 5, 0, 9, 9}
	h, body, err = ParseRequestHeader(b, 2)
	if err != nil || h.ClientIDString() != "x" || !bytes.Equal(body, []byte{9, 9}) {
		t.Fatalf("tags: %+v %v %v", h, body, err)
	}
	for _, bad := range [][]byte{
		{0, 3, 0, 1},                             // short
		{0, 3, 0, 1, 0, 0, 0, 7, 0, 5, 'a'},      // truncated client id
		{0, 3, 0, 1, 0, 0, 0, 7, 0x80, 0},        // negative length
		{0, 3, 0, 12, 0, 0, 0, 7, 0, 0, 1, 0},    // tag without size
		{0, 3, 0, 12, 0, 0, 0, 7, 0, 0, 1, 0, 9}, // tag size past end
	} {
		hv := int8(1)
		if bad[3] == 12 {
			hv = 2
		}
		if _, _, err := ParseRequestHeader(bad, hv); err == nil {
			t.Errorf("no error for %v", bad)
		}
	}
	if RequestHeaderVersion(18, 3) != 2 || RequestHeaderVersion(18, 2) != 1 || RequestHeaderVersion(7, 0) != 0 ||
		ResponseHeaderVersion(18, 3) != 0 || ResponseHeaderVersion(3, 9) != 1 || ResponseHeaderVersion(3, 8) != 0 {
		t.Fatal("header versions")
	}
}

func TestReadFrameRejectsBeforeAllocating(t *testing.T) {
	// The reader only holds the 4-byte prefix: a body read would fail with
	// EOF, so getting FrameSizeError proves the size was checked first.
	for _, size := range []uint32{0x7fffffff, 0xffffffff, 101} {
		b := binary.BigEndian.AppendUint32(nil, size)
		_, err := ReadFrame(bytes.NewReader(b), 100)
		var fse *FrameSizeError
		if !errors.As(err, &fse) || !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("size %d: %v", size, err)
		}
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 5, 1}), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestUnsupportedApiVersionsVersion(t *testing.T) {
	_, addr, _ := startServer(t, &fakeDispatcher{}, Config{})
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 77 // flexible: header v2
	c.send(req, 5)
	corr, body, err := c.recv(0)
	if err != nil || corr != 5 {
		t.Fatalf("corr %d err %v", corr, err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 35 || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("%+v", resp)
	}
	c.apiVersionsWorks() // the connection stays usable
}

func TestUnknownKeyOrVersionClosesConnection(t *testing.T) {
	_, addr, logs := startServer(t, &fakeDispatcher{}, Config{})
	for _, req := range []kmsg.Request{
		func() kmsg.Request { r := kmsg.NewPtrMetadataRequest(); r.Version = 13; return r }(),
		func() kmsg.Request { r := kmsg.NewPtrFetchRequest(); r.Version = 4; return r }(),
	} {
		c := dial(t, addr)
		c.send(req, 1)
		c.expectClosed()
	}
	c := dial(t, addr)
	c.nc.Write([]byte{0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff}) // key 999
	c.expectClosed()
	dial(t, addr).apiVersionsWorks()
	if !strings.Contains(logs.String(), "unsupported api key or version") {
		t.Fatalf("no log line: %s", logs)
	}
}

func TestOversizedFrameClosesConnection(t *testing.T) {
	_, addr, logs := startServer(t, &fakeDispatcher{}, Config{MaxRequestBytes: 1000})
	c := dial(t, addr)
	c.nc.Write(binary.BigEndian.AppendUint32(nil, 1001))
	c.expectClosed()
	c = dial(t, addr)
	c.nc.Write(binary.BigEndian.AppendUint32(nil, 0x7fffffff))
	c.expectClosed()
	dial(t, addr).apiVersionsWorks()
	if !strings.Contains(logs.String(), "request frame too large") {
		t.Fatalf("no log line: %s", logs)
	}
}

func TestMalformedBodyClosesConnection(t *testing.T) {
	_, addr, _ := startServer(t, &fakeDispatcher{}, Config{})
	c := dial(t, addr)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	f := frameRequest(req, 1)
	f = f[:len(f)-6] // cut the body short
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	c.nc.Write(f)
	c.expectClosed()
}

func TestPanicClosesOnlyThatConnection(t *testing.T) {
	_, addr, logs := startServer(t, &fakeDispatcher{}, Config{})
	other := dial(t, addr)
	other.apiVersionsWorks()
	c := dial(t, addr)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 4
	c.send(req, 1)
	c.expectClosed()
	other.apiVersionsWorks()
	dial(t, addr).apiVersionsWorks()
	if !strings.Contains(logs.String(), "handler panicked") {
		t.Fatalf("no log line: %s", logs)
	}
}

func TestPipelinedResponsesInOrder(t *testing.T) {
	// Earlier Metadata requests take longer than later ones, so concurrent
	// handling finishes them out of order; responses must still be in order.
	d := &fakeDispatcher{metadataDelay: func(n int) time.Duration { return time.Duration(10-n%10) * time.Millisecond }}
	_, addr, _ := startServer(t, d, Config{})
	c := dial(t, addr)
	var buf []byte
	const n = 30
	for i := range n {
		var req kmsg.Request
		switch {
		case i == 15:
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Version = 4
			req = r
		case i == 20:
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Version = 4
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = "no-response"
			r.Topics = append(r.Topics, rt)
			req = r
		default:
			r := kmsg.NewPtrMetadataRequest()
			r.Version = 7
			req = r
		}
		buf = append(buf, frameRequest(req, int32(i))...)
	}
	c.nc.Write(buf) // all pipelined in one write
	for i := range n {
		if i == 20 {
			continue // no response
		}
		corr, _, err := c.recv(0)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
	if d.maxRunning.Load() < 2 {
		t.Errorf("metadata requests never ran concurrently (max %d)", d.maxRunning.Load())
	}
	if d.barrierSawRunning.Load() {
		t.Errorf("a barrier request ran while another request was running")
	}
}

func TestIdleTimeout(t *testing.T) {
	_, addr, _ := startServer(t, &fakeDispatcher{}, Config{IdleTimeout: 100 * time.Millisecond})
	c := dial(t, addr)
	c.apiVersionsWorks()
	start := time.Now()
	c.expectClosed()
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", el)
	}
}

func TestIdleTimeoutSparesBusyConnections(t *testing.T) {
	d := &fakeDispatcher{block: make(chan struct{})}
	_, addr, _ := startServer(t, d, Config{IdleTimeout: 50 * time.Millisecond})
	c := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 7
	c.send(req, 1)
	// Wait well past the idle timeout while the request is in flight.
	waitUntil(t, func() bool { return d.mdCount.Load() == 1 })
	timer := time.NewTimer(200 * time.Millisecond)
	<-timer.C
	close(d.block)
	if corr, _, err := c.recv(0); err != nil || corr != 1 {
		t.Fatalf("in-flight request: corr %d err %v", corr, err)
	}
}

func TestShutdownFinishesInFlight(t *testing.T) {
	d := &fakeDispatcher{block: make(chan struct{})}
	s, addr, _ := startServer(t, d, Config{})
	c := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 7
	c.send(req, 1)
	waitUntil(t, func() bool { return d.mdCount.Load() == 1 })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx) // cancels handler contexts: the blocked handler returns
	}()
	if corr, _, err := c.recv(0); err != nil || corr != 1 {
		t.Fatalf("in-flight request not answered: corr %d err %v", corr, err)
	}
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		s, addr, _ := startServer(t, &fakeDispatcher{}, Config{})
		for range 20 {
			c := dial(t, addr)
			c.apiVersionsWorks()
			c.nc.Close()
		}
		waitUntil(t, func() bool { return s.NumConns() == 0 })
	}()
	waitUntil(t, func() bool { return runtime.NumGoroutine() <= before+3 })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before the deadline")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Requests already read and handled are answered on a graceful shutdown even
// when the read loop is blocked waiting for a free slot in the response queue
// (it must stop reading, not drop the connection).
func TestShutdownWithFullQueueAnswersQueuedRequests(t *testing.T) {
	d := &fakeDispatcher{block: make(chan struct{})}
	s, addr, _ := startServer(t, d, Config{MaxInFlight: 2})
	c := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 7
	for i := int32(1); i <= 4; i++ {
		c.send(req, i)
	}
	// Three handlers run; the fourth request waits in enqueue.
	waitUntil(t, func() bool { return d.mdCount.Load() == 3 })
	waitUntil(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for cn := range s.conns {
			if cn.active.Load() == 4 {
				return true
			}
		}
		return false
	})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	for want := int32(1); want <= 3; want++ {
		corr, _, err := c.recv(0)
		if err != nil || corr != want {
			t.Fatalf("handled request %d not answered on graceful shutdown: got corr %d, err %v", want, corr, err)
		}
	}
}

// The header-version table agrees with asking kmsg for every key and version
// (and a few versions beyond what kmsg knows).
func TestRequestHeaderVersionTable(t *testing.T) {
	for key := int16(-1); key <= kmsg.MaxKey+2; key++ {
		for v := int16(0); v < 40; v++ {
			want := int8(1)
			if key == 7 && v == 0 {
				want = 0
			} else if req := kmsg.RequestForKey(key); req != nil {
				req.SetVersion(v)
				if req.IsFlexible() {
					want = 2
				}
			}
			if got := RequestHeaderVersion(key, v); got != want {
				t.Fatalf("key %d v%d: header v%d, kmsg says v%d", key, v, got, want)
			}
		}
	}
	if got := testing.AllocsPerRun(100, func() { RequestHeaderVersion(1, 12) }); got != 0 {
		t.Fatalf("RequestHeaderVersion allocates %v times", got)
	}
}
