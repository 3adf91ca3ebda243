package peer

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestConnClosedReportsSender: the end of a connection on which a node sent
// raft messages, or a controller request whose handler named the node, is
// reported with that node; an untagged connection's end is not.
func TestConnClosedReportsSender(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := NewServer(newRecorder(), logger)
	closed := make(chan uint64, 16)
	srv.SetConnClosed(func(node uint64) { closed <- node })
	srv.Handle("hello", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var from uint64
		json.Unmarshal(raw, &from)
		srv.TagConn(ctx, from)
		return "hi", nil
	})
	srv.Handle("anon", func(ctx context.Context, raw json.RawMessage) (any, error) { return "hi", nil })
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	expect := func(want uint64) {
		t.Helper()
		select {
		case got := <-closed:
			if got != want {
				t.Fatalf("closed connection reported for node %d, want %d", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no closed connection reported for node %d", want)
		}
	}
	ctx := context.Background()

	// A controller request naming node 7, then the client's connections end.
	c := NewClient(nil, nil, logger)
	var out string
	if err := c.Call(ctx, addr, "hello", uint64(7), &out); err != nil || out != "hi" {
		t.Fatalf("call: %q %v", out, err)
	}
	if n := srv.OpenConns(7); n != 1 {
		t.Fatalf("node 7 has %d open connections, want 1 (the kept-alive one)", n)
	}
	c.Close()
	expect(7)
	if n := srv.OpenConns(7); n != 0 {
		t.Fatalf("node 7 has %d open connections after its client closed, want 0", n)
	}

	// Raft messages from node 3.
	rc := NewClient(map[uint64]string{9: addr}, nil, logger)
	rc.Send([]*raftpb.Message{{Type: raftpb.MsgHeartbeat.Enum(), From: proto.Uint64(3), To: proto.Uint64(9), Term: proto.Uint64(1)}})
	deadline := time.Now().Add(30 * time.Second)
	for srvConns(srv) == 0 || !tagged(srv, 3) {
		if time.Now().After(deadline) {
			t.Fatal("the raft message's connection was not tagged")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rc.Close()
	expect(3)

	// An untagged connection ends unreported: the next report, of a tagged
	// connection closed after it, names that connection's node.
	ac := NewClient(nil, nil, logger)
	if err := ac.Call(ctx, addr, "anon", 0, &out); err != nil {
		t.Fatal(err)
	}
	ac.Close()
	deadline = time.Now().Add(30 * time.Second)
	for srvConns(srv) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the untagged connection did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tc := NewClient(nil, nil, logger)
	if err := tc.Call(ctx, addr, "hello", uint64(5), &out); err != nil {
		t.Fatal(err)
	}
	tc.Close()
	expect(5)
}

func srvConns(s *Server) int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return len(s.conns)
}

func tagged(s *Server, node uint64) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for _, t := range s.conns {
		if t.node == node {
			return true
		}
	}
	return false
}
