// Package peer carries node-to-node traffic on the controller listener: raft
// messages between the quorum's voters, and the controller's requests
// (broker registration and heartbeats, topic changes, producer-id blocks)
// from brokers to the active controller.
//
// It is HTTP on the controller listener's address (over TLS, and after a
// SASL exchange per connection, as the listener is configured; sasl.go):
// POST /raft carries a
// batch of raft messages (length-prefixed protobuf), one-way, except
// snapshots (MsgSnap), which go in chunks on POST /raft/snapshot from a
// goroutine of their own per peer (snapshot.go); POST
// /controller/<method> carries one JSON request and its JSON answer. Each
// peer has one sending goroutine with a bounded queue, so a slow or dead
// peer never blocks the quorum's Ready loop (raft retries what is dropped).
//
// The package knows neither Kafka nor what the messages mean.
package peer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// maxRaftBody bounds one /raft request (snapshots go on /raft/snapshot).
const maxRaftBody = 256 << 20

// RaftReceiver takes raft messages received from peers.
type RaftReceiver interface {
	Step(ctx context.Context, m *raftpb.Message) error
}

// Handler answers one controller method: it decodes req into its own type
// and returns a JSON-encodable answer or an error.
type Handler func(ctx context.Context, req json.RawMessage) (any, error)

// RemoteError is an error answered by the other side, with its code (the
// controller's, e.g. "not-controller").
type RemoteError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Leader is the controller the answering node knows of (0: none).
	Leader uint64 `json:"leader,omitempty"`
	// LeaderAddress is that controller's peer address, when known (a node
	// outside the quorum's configuration has no other way to learn it).
	LeaderAddress string `json:"leader_address,omitempty"`
}

func (e *RemoteError) Error() string { return e.Code + ": " + e.Message }

// Server serves the peer endpoints on a listener.
type Server struct {
	raft     RaftReceiver
	mu       sync.RWMutex
	handlers map[string]Handler
	status   func(asking uint64) Status
	http     *http.Server
	logger   *slog.Logger
	// ErrorFor turns a handler error into a RemoteError; nil uses code "error".
	ErrorFor func(error) *RemoteError

	connMu       sync.Mutex // conntrack.go
	conns        map[net.Conn]*connTag
	onConnClosed func(node uint64)
}

// NewServer returns a server stepping raft messages into raft.
func NewServer(raft RaftReceiver, logger *slog.Logger) *Server {
	s := &Server{raft: raft, handlers: map[string]Handler{}, logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /raft", s.serveRaft)
	mux.HandleFunc("POST /raft/snapshot", s.serveSnapshot)
	mux.HandleFunc("POST /controller/{method}", s.serveController)
	mux.HandleFunc("GET /status", s.serveStatus)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil,
		ConnContext: s.connContext, ConnState: s.connState}
	return s
}

// Status is what a node says of its quorum state to a starting peer.
type Status struct {
	Node   uint64 `json:"node"`
	Term   uint64 `json:"term"`
	Commit uint64 `json:"commit"`
	// Known: the asking node (?node=ID) has been part of the cluster
	// before (its metadata holds the node's registration).
	Known bool `json:"known"`
	// Cluster is the raft cluster id of the answering node's quorum
	// directory (a node joining through bootstrap servers takes it).
	Cluster uint64 `json:"cluster,omitempty"`
	// Voter: the asking node is a voter in the answering node's view of
	// the quorum's configuration.
	Voter bool `json:"voter,omitempty"`
	// Incarnation names the answering process (a new one at every start).
	Incarnation string `json:"incarnation,omitempty"`
}

// SetStatus sets what answers GET /status?node=ID.
func (s *Server) SetStatus(fn func(asking uint64) Status) {
	s.mu.Lock()
	s.status = fn
	s.mu.Unlock()
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	fn := s.status
	s.mu.RUnlock()
	if fn == nil {
		http.Error(w, "no status", http.StatusServiceUnavailable)
		return
	}
	asking, _ := strconv.ParseUint(r.URL.Query().Get("node"), 10, 64)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(fn(asking))
}

// PeerStatus asks the node at addr for its Status, on behalf of node self.
func (c *Client) PeerStatus(ctx context.Context, addr string, self uint64) (Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.scheme+"://"+addr+"/status?node="+strconv.FormatUint(self, 10), nil)
	if err != nil {
		return Status{}, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("peer %s: %s", addr, res.Status)
	}
	var st Status
	return st, json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&st)
}

// Handle registers the handler of a controller method.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	s.handlers[method] = h
	s.mu.Unlock()
}

// Serve serves ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.http.Shutdown(ctx)
}

func (s *Server) serveRaft(w http.ResponseWriter, r *http.Request) {
	br := bufio.NewReader(http.MaxBytesReader(w, r.Body, maxRaftBody))
	var lenBuf [4]byte
	tagged := false
	for {
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			if !errors.Is(err, io.EOF) {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			break
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n > maxRaftBody {
			http.Error(w, "message too large", http.StatusBadRequest)
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(br, buf); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m := &raftpb.Message{}
		if err := proto.Unmarshal(buf, m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !tagged {
			s.TagConn(r.Context(), m.GetFrom()) // conntrack.go
			tagged = true
		}
		_ = s.raft.Step(r.Context(), m)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) serveController(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	s.mu.RLock()
	h := s.handlers[method]
	s.mu.RUnlock()
	w.Header().Set("Content-Type", "application/json")
	if h == nil {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(&RemoteError{Code: "unknown-method", Message: "no controller method " + method})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(&RemoteError{Code: "bad-request", Message: err.Error()})
		return
	}
	resp, err := h(r.Context(), body)
	if err != nil {
		re := &RemoteError{Code: "error", Message: err.Error()}
		if s.ErrorFor != nil {
			re = s.ErrorFor(err)
		}
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(re)
		return
	}
	json.NewEncoder(w).Encode(resp)
}

// Client sends to peers by node id.
type Client struct {
	http   *http.Client
	scheme string // "http", or "https" with TLS
	logger *slog.Logger

	mu     sync.Mutex
	addrs  map[uint64]string
	queues map[uint64]chan []*raftpb.Message
	// snapQueues: one MsgSnap at a time per peer (snapshot.go).
	snapQueues map[uint64]chan *raftpb.Message
	snapReport func(to uint64, ok bool)
	stopc      chan struct{}
	wg         sync.WaitGroup
}

// NewClient returns a client reaching node ids at addrs (host:port), over
// TLS when tc is set (the controller listener's, see security.PeerTLS),
// with SASL when an option says so (WithSASL, sasl.go).
func NewClient(addrs map[uint64]string, tc *tls.Config, logger *slog.Logger, opts ...ClientOption) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     time.Minute,
		TLSClientConfig:     tc,
	}
	for _, o := range opts {
		o(tr)
	}
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	return &Client{
		http:   &http.Client{Transport: tr},
		scheme: scheme,
		logger: logger,
		addrs:  addrs,
		queues: map[uint64]chan []*raftpb.Message{},
		stopc:  make(chan struct{}),

		snapQueues: map[uint64]chan *raftpb.Message{},
	}
}

// Addr returns the peer address of node id.
func (c *Client) Addr(id uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.addrs[id]
	return a, ok
}

// SetAddr sets (or changes) the peer address of node id; messages queued
// for it go to the new address from their next send.
func (c *Client) SetAddr(id uint64, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addrs == nil {
		c.addrs = map[uint64]string{}
	}
	c.addrs[id] = addr
}

// Send implements quorum.Transport: messages are queued per peer and sent
// by that peer's goroutine; when its queue is full they are dropped.
func (c *Client) Send(msgs []*raftpb.Message) {
	byPeer := map[uint64][]*raftpb.Message{}
	var snaps []*raftpb.Message
	for _, m := range msgs {
		if m.GetType() == raftpb.MsgSnap {
			snaps = append(snaps, m)
			continue
		}
		byPeer[m.GetTo()] = append(byPeer[m.GetTo()], m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stopc:
		for _, m := range snaps {
			go c.report(m.GetTo(), false)
		}
		return
	default:
	}
	for _, m := range snaps {
		if _, known := c.addrs[m.GetTo()]; !known {
			go c.report(m.GetTo(), false)
			continue
		}
		c.sendSnap(m)
	}
	for to, ms := range byPeer {
		q, ok := c.queues[to]
		if !ok {
			if _, known := c.addrs[to]; !known {
				continue
			}
			q = make(chan []*raftpb.Message, 256)
			c.queues[to] = q
			c.wg.Add(1)
			go c.sendLoop(to, q)
		}
		select {
		case q <- ms:
		default: // peer is slow or gone: raft retries
		}
	}
}

func (c *Client) sendLoop(to uint64, q chan []*raftpb.Message) {
	defer c.wg.Done()
	var failing bool
	for {
		var batch []*raftpb.Message
		select {
		case <-c.stopc:
			return
		case batch = <-q:
		}
		// Take whatever else is queued into the same request.
	more:
		for len(batch) < 1024 {
			select {
			case ms := <-q:
				batch = append(batch, ms...)
			default:
				break more
			}
		}
		var body bytes.Buffer
		for _, m := range batch {
			b, err := proto.Marshal(m)
			if err != nil {
				continue
			}
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(b)))
			body.Write(l[:])
			body.Write(b)
		}
		addr, _ := c.Addr(to)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme+"://"+addr+"/raft", &body)
		resp, err := c.http.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				err = fmt.Errorf("status %s", resp.Status)
			}
		}
		cancel()
		if err != nil {
			if !failing {
				c.logger.Warn("quorum: cannot reach peer", "addr", addr, "err", err)
			}
			failing = true
			// Back off a little so a dead peer costs no busy loop.
			select {
			case <-c.stopc:
				return
			case <-time.After(100 * time.Millisecond):
			}
		} else if failing {
			c.logger.Info("quorum: peer reachable again", "addr", addr)
			failing = false
		}
	}
}

// Call sends a controller request to addr and decodes the answer into resp.
// An answered error is a *RemoteError.
func (c *Client) Call(ctx context.Context, addr, method string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme+"://"+addr+"/controller/"+method, bytes.NewReader(data))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(hr)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		re := &RemoteError{}
		if json.Unmarshal(body, re) != nil || re.Code == "" {
			return fmt.Errorf("peer %s: %s: %s", addr, res.Status, strings.TrimSpace(string(body)))
		}
		return re
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(body, resp)
}

// Close stops the sending goroutines.
func (c *Client) Close() {
	c.mu.Lock()
	select {
	case <-c.stopc:
	default:
		close(c.stopc)
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.http.CloseIdleConnections()
}
