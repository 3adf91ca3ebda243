package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// recorder is a RaftReceiver keeping what it is stepped; a MsgSnap blocks
// in Step while hold is open.
type recorder struct {
	mu      sync.Mutex
	msgs    []*raftpb.Message
	inSnap  chan struct{} // gets a value when a MsgSnap enters Step
	hold    chan struct{} // when non-nil, a MsgSnap's Step waits for it to close
	stepped chan struct{} // gets a value per stepped message
	inStep  int           // MsgSnaps now in Step (mu)
	during  int           // heartbeats stepped while a MsgSnap was in Step (mu)
}

func newRecorder() *recorder {
	return &recorder{inSnap: make(chan struct{}, 16), stepped: make(chan struct{}, 1024)}
}

func (r *recorder) Step(ctx context.Context, m *raftpb.Message) error {
	if m.GetType() == raftpb.MsgSnap {
		r.mu.Lock()
		r.inStep++
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inStep--
			r.mu.Unlock()
		}()
		r.inSnap <- struct{}{}
		if r.hold != nil {
			select {
			case <-r.hold:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	if m.GetType() == raftpb.MsgHeartbeat && r.inStep > 0 {
		r.during++
	}
	r.mu.Unlock()
	r.stepped <- struct{}{}
	return nil
}

func (r *recorder) heartbeatsDuringSnap() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.during
}

func (r *recorder) of(t raftpb.MessageType) []*raftpb.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*raftpb.Message
	for _, m := range r.msgs {
		if m.GetType() == t {
			out = append(out, m)
		}
	}
	return out
}

type report struct {
	to uint64
	ok bool
}

// snapPair serves rec on a local listener (wrapped by wrap when set) and
// returns a client reaching it as node 2, whose snapshot reports go to the
// returned channel.
func snapPair(t *testing.T, rec RaftReceiver, wrap func(net.Listener) net.Listener) (*Client, chan report, string) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	srv := NewServer(rec, logger)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := NewClient(map[uint64]string{2: addr}, nil, logger)
	t.Cleanup(c.Close)
	reps := make(chan report, 16)
	c.SetSnapshotReporter(func(to uint64, ok bool) { reps <- report{to, ok} })
	return c, reps, addr
}

func snapMsg(size int) *raftpb.Message {
	data := make([]byte, size)
	rand.New(rand.NewSource(int64(size))).Read(data)
	return &raftpb.Message{
		Type: raftpb.MsgSnap.Enum(), From: proto.Uint64(1), To: proto.Uint64(2), Term: proto.Uint64(7),
		Snapshot: &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
			Index: proto.Uint64(1234), Term: proto.Uint64(6),
			ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}},
		}},
	}
}

func waitReport(t *testing.T, reps chan report) report {
	t.Helper()
	select {
	case r := <-reps:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("no snapshot report within 60s")
	}
	return report{}
}

// countChunks walks an encoded transfer and returns its chunk count.
func countChunks(t *testing.T, b []byte) int {
	t.Helper()
	n := binary.BigEndian.Uint32(b)
	if n > 1024 {
		t.Fatalf("message header of %d bytes: the data is not left out of it", n)
	}
	b = b[4+n:]
	size := binary.BigEndian.Uint64(b)
	b = b[12:]
	chunks := 0
	for got := uint64(0); got < size; chunks++ {
		l := binary.BigEndian.Uint32(b)
		if l == 0 || l > snapChunk {
			t.Fatalf("chunk %d of %d bytes", chunks, l)
		}
		b = b[8+l:]
		got += uint64(l)
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes after the last chunk", len(b))
	}
	return chunks
}

func TestSnapshotSentInChunks(t *testing.T) {
	m := snapMsg(5*snapChunk + 12345)
	var enc bytes.Buffer
	if err := writeSnapshot(&enc, m); err != nil {
		t.Fatal(err)
	}
	if n := countChunks(t, enc.Bytes()); n != 6 {
		t.Fatalf("%d chunks, want 6", n)
	}

	rec := newRecorder()
	c, reps, _ := snapPair(t, rec, nil)
	c.Send([]*raftpb.Message{m})
	if r := waitReport(t, reps); r != (report{2, true}) {
		t.Fatalf("report %+v, want finished for 2", r)
	}
	got := rec.of(raftpb.MsgSnap)
	if len(got) != 1 {
		t.Fatalf("%d snapshots stepped, want 1", len(got))
	}
	if !proto.Equal(got[0], m) {
		t.Fatalf("stepped snapshot differs: %d bytes of data, metadata %v", len(got[0].GetSnapshot().GetData()), got[0].GetSnapshot().GetMetadata())
	}
}

func TestSnapshotCorruptOrTruncatedRefused(t *testing.T) {
	m := snapMsg(3*snapChunk + 7)
	var enc bytes.Buffer
	if err := writeSnapshot(&enc, m); err != nil {
		t.Fatal(err)
	}
	good := enc.Bytes()
	if _, err := readSnapshot(bytes.NewReader(good)); err != nil {
		t.Fatalf("intact transfer refused: %v", err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	cases := map[string][]byte{
		"flipped":         flipped,
		"truncated":       good[:len(good)-100],
		"cut at a chunk":  good[:len(good)-(7+8)],
		"trailing":        append(bytes.Clone(good), 0),
		"header only":     good[:20],
		"empty":           nil,
		"size over bound": func() []byte { return oversize(t, good) }(),
	}
	rec := newRecorder()
	_, _, addr := snapPair(t, rec, nil)
	for name, body := range cases {
		if _, err := readSnapshot(bytes.NewReader(body)); err == nil {
			t.Errorf("%s: read without error", name)
		}
		resp, err := http.Post("http://"+addr+"/raft/snapshot", "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %s, want 400", name, resp.Status)
		}
	}
	if n := len(rec.of(raftpb.MsgSnap)); n != 0 {
		t.Fatalf("%d bad snapshots stepped", n)
	}

	// Through the client: a byte flipped on the wire is refused by the
	// receiver and reported as a failure to raft.
	rec2 := newRecorder()
	c, reps, _ := snapPair(t, rec2, func(ln net.Listener) net.Listener { return &flipListener{Listener: ln, at: 2 * snapChunk} })
	c.Send([]*raftpb.Message{m})
	if r := waitReport(t, reps); r != (report{2, false}) {
		t.Fatalf("report %+v, want failure for 2", r)
	}
	if n := len(rec2.of(raftpb.MsgSnap)); n != 0 {
		t.Fatalf("%d corrupt snapshots stepped", n)
	}
}

// oversize rewrites good's data size field beyond the bound.
func oversize(t *testing.T, good []byte) []byte {
	b := bytes.Clone(good)
	n := binary.BigEndian.Uint32(b)
	binary.BigEndian.PutUint64(b[4+n:], maxSnapshotData+1)
	return b
}

// flipListener's connections flip one byte of what they read at offset at.
type flipListener struct {
	net.Listener
	at int64
}

func (l *flipListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &flipConn{Conn: c, at: l.at}, nil
}

type flipConn struct {
	net.Conn
	at, off int64
}

func (c *flipConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.off <= c.at && c.at < c.off+int64(n) {
		p[c.at-c.off] ^= 0x01
	}
	c.off += int64(n)
	return n, err
}

func TestSnapshotDoesNotHoldHeartbeats(t *testing.T) {
	rec := newRecorder()
	rec.hold = make(chan struct{})
	c, reps, _ := snapPair(t, rec, nil)
	c.Send([]*raftpb.Message{snapMsg(2*snapChunk + 1)})
	select {
	case <-rec.inSnap:
	case <-time.After(60 * time.Second):
		t.Fatal("snapshot not received within 60s")
	}
	// The snapshot is held in Step; heartbeats to the same peer still pass.
	hb := &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), From: proto.Uint64(1), To: proto.Uint64(2), Term: proto.Uint64(7)}
	deadline := time.Now().Add(60 * time.Second)
	for rec.heartbeatsDuringSnap() < 3 {
		if time.Now().After(deadline) {
			close(rec.hold)
			t.Fatalf("%d heartbeats passed while a snapshot was in flight, want 3", rec.heartbeatsDuringSnap())
		}
		c.Send([]*raftpb.Message{hb})
		select {
		case <-rec.stepped:
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case r := <-reps:
		t.Fatalf("snapshot reported (%+v) before the receiver took it", r)
	default:
	}
	close(rec.hold)
	if r := waitReport(t, reps); r != (report{2, true}) {
		t.Fatalf("report %+v, want finished for 2", r)
	}
	if n := len(rec.of(raftpb.MsgSnap)); n != 1 {
		t.Fatalf("%d snapshots stepped, want 1", n)
	}
}

// TestSnapshotToAnEarlierRelease: a node of an earlier release serves no
// /raft/snapshot (404); during a rolling upgrade it gets the snapshot whole
// on /raft instead, and raft hears that it arrived.
func TestSnapshotToAnEarlierRelease(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	srv := NewServer(rec, logger)
	inner := srv.http.Handler
	var refused atomic.Int32
	srv.http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/raft/snapshot" {
			refused.Add(1)
			http.NotFound(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := NewClient(map[uint64]string{2: ln.Addr().String()}, nil, logger)
	t.Cleanup(c.Close)
	reps := make(chan report, 16)
	c.SetSnapshotReporter(func(to uint64, ok bool) { reps <- report{to, ok} })
	m := snapMsg(2*snapChunk + 5)
	c.Send([]*raftpb.Message{m})
	if r := waitReport(t, reps); r != (report{2, true}) {
		t.Fatalf("report %+v, want finished for 2", r)
	}
	if refused.Load() != 1 {
		t.Fatalf("/raft/snapshot asked %d times, want 1", refused.Load())
	}
	got := rec.of(raftpb.MsgSnap)
	if len(got) != 1 || !proto.Equal(got[0], m) {
		t.Fatalf("%d snapshots stepped (want 1, identical)", len(got))
	}
}
