package quorum

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// nodeReceiver steps into whichever node runs now (none while stopped).
type nodeReceiver struct{ n atomic.Pointer[Node] }

func (r *nodeReceiver) Step(ctx context.Context, m *raftpb.Message) error {
	if n := r.n.Load(); n != nil {
		return n.Step(ctx, m)
	}
	return ErrStopped
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// poll waits until cond holds, for up to 60 s (no ticks: nodes tick on
// their own in these tests).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proposeAnywhere proposes data on whichever live node leads, retrying
// through elections. A proposal whose outcome was unknown may commit
// twice; callers compare nodes with each other, not with a fixed list.
func proposeAnywhere(t *testing.T, c *cluster, data string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for id, mb := range c.m {
			if mb.node == nil || mb.node.Leader() != id {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := mb.node.Propose(ctx, []byte(data))
			cancel()
			if err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("could not propose %.20q within 60s", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A node that was away catches up from a multi-MiB snapshot sent over
// internal/peer in chunks.
func TestCatchUpFromSnapshotOverPeer(t *testing.T) {
	var logs lockedBuf
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	addrs := map[uint64]string{}
	lns := map[uint64]net.Listener{}
	for id := uint64(1); id <= 3; id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id], addrs[id] = ln, ln.Addr().String()
	}
	recv := map[uint64]*nodeReceiver{}
	c := &cluster{t: t, nw: NewMemNetwork(), m: map[uint64]*member{}, every: 5, tickEvery: 50 * time.Millisecond}
	t.Cleanup(c.stopAll)
	clients := map[uint64]*peer.Client{}
	for id := uint64(1); id <= 3; id++ {
		c.peers = append(c.peers, id)
		recv[id] = &nodeReceiver{}
		srv := peer.NewServer(recv[id], logger)
		go srv.Serve(lns[id])
		t.Cleanup(func() { srv.Close() })
		others := map[uint64]string{}
		for o, a := range addrs {
			if o != id {
				others[o] = a
			}
		}
		cl := peer.NewClient(others, nil, logger)
		t.Cleanup(cl.Close)
		clients[id] = cl
	}
	c.wrap = func(id uint64, _ Transport) Transport { return clients[id] }
	start := func(id uint64) {
		if err := c.start(id, false); err != nil {
			t.Fatal(err)
		}
		recv[id].n.Store(c.m[id].node)
	}
	for _, id := range c.peers {
		c.m[id] = &member{fs: vfs.NewMemFS()}
		start(id)
	}
	proposeAnywhere(t, c, "a0")
	// Stop a node that has applied it; the other two go on.
	var lag uint64
	poll(t, "a follower that applied the first entry", func() bool {
		for id, mb := range c.m {
			if mb.node.Leader() != 0 && mb.node.Leader() != id && len(mb.sm.list()) > 0 {
				lag = id
				return true
			}
		}
		return false
	})
	recv[lag].n.Store(nil)
	if err := c.m[lag].node.Stop(); err != nil {
		t.Fatal(err)
	}
	c.m[lag].node = nil
	lagLast := func() uint64 {
		st, err := OpenStorage(c.m[lag].fs, "/data/quorum", testCluster, lag)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		i, _ := st.LastIndex()
		return i
	}()

	// 30 entries of 100 KiB: a snapshot of about 3 MiB, several chunks.
	pad := strings.Repeat("x", 100<<10)
	for i := range 30 {
		proposeAnywhere(t, c, seq("b", i, i+1)[0]+pad)
	}
	// Both live nodes compacted past what the stopped node has, so only a
	// snapshot can bring it up to date, whichever of them leads.
	poll(t, "compaction on the live nodes", func() bool {
		for _, mb := range c.m {
			if mb.node == nil {
				continue
			}
			if first, _ := mb.node.st.FirstIndex(); first <= lagLast+1 {
				return false
			}
		}
		return true
	})
	start(lag)
	poll(t, "the restarted node to apply what the others did", func() bool {
		var ref []string
		for _, mb := range c.m {
			l := mb.sm.list()
			if len(l) < 31 || (ref != nil && !equal(l, ref)) {
				return false
			}
			ref = l
		}
		return true
	})
	if fi, err := c.m[lag].fs.ReadDir("/data/quorum"); err != nil || !hasSnap(fi) {
		t.Fatalf("caught-up node has no snapshot file: %v", err)
	}
	poll(t, "the delivery log line", func() bool { return strings.Contains(logs.String(), "quorum: snapshot delivered") })
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "quorum: snapshot delivered") {
			continue
		}
		t.Log(line)
		_, after, _ := strings.Cut(line, " chunks=")
		n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, " ", 2)[0]))
		if n < 2 {
			t.Errorf("snapshot not sent in several chunks: %s", line)
		}
	}
}
