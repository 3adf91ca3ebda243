package quorum

import (
	"sync"
	"sync/atomic"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// reportingTransport reports snapshot outcomes as internal/peer does: the
// first `fail` MsgSnaps are dropped and reported failed, later ones are
// delivered and reported finished.
type reportingTransport struct {
	inner Transport
	fail  *atomic.Int32
	sent  *atomic.Int32 // MsgSnaps handed to Send

	mu     sync.Mutex
	report func(to uint64, ok bool)
}

func (t *reportingTransport) SetSnapshotReporter(report func(to uint64, ok bool)) {
	t.mu.Lock()
	t.report = report
	t.mu.Unlock()
}

func (t *reportingTransport) Send(msgs []*raftpb.Message) {
	t.mu.Lock()
	report := t.report
	t.mu.Unlock()
	var rest []*raftpb.Message
	for _, m := range msgs {
		if m.GetType() != raftpb.MsgSnap {
			rest = append(rest, m)
			continue
		}
		t.sent.Add(1)
		to := m.GetTo()
		if t.fail.Add(-1) >= 0 {
			go report(to, false) // reported from another goroutine, as peer does
			continue
		}
		t.inner.Send([]*raftpb.Message{proto.Clone(m).(*raftpb.Message)})
		go report(to, true)
	}
	t.inner.Send(rest)
}

// A snapshot the transport reports failed is sent again: raft keeps a
// follower paused in snapshot state until it hears the outcome, so the
// lagging node catches up only if the failure reached raft.
func TestFailedSnapshotIsSentAgain(t *testing.T) {
	var fail, sent atomic.Int32
	fail.Store(1)
	c := &cluster{t: t, nw: NewMemNetwork(), m: map[uint64]*member{}, every: 5,
		wrap: func(_ uint64, tr Transport) Transport {
			return &reportingTransport{inner: tr, fail: &fail, sent: &sent}
		}}
	for i := uint64(1); i <= 3; i++ {
		c.peers = append(c.peers, i)
	}
	for _, id := range c.peers {
		c.m[id] = &member{fs: vfs.NewMemFS()}
		if err := c.start(id, false); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stopAll)
	for _, mb := range c.m {
		if !mb.node.transportSnap {
			t.Fatal("node does not take snapshot reports from its transport")
		}
	}
	l := c.leader()
	var lag uint64
	for id := range c.m {
		if id != l {
			lag = id
			break
		}
	}
	c.nw.Isolate(lag)
	want := seq("f", 0, 30)
	c.mustPropose(l, want...)
	c.waitFor("compaction", func() bool {
		st, _ := c.m[l].node.Status()
		return st.Applied >= 30
	})
	c.nw.Heal()
	c.converge(want)
	if n := sent.Load(); n < 2 {
		t.Fatalf("%d snapshots sent, want the failed one and another", n)
	}
}
