package quorum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// listSM records every applied entry's data in order.
type listSM struct {
	mu   sync.Mutex
	data []string
}

func (s *listSM) Apply(ents []Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range ents {
		s.data = append(s.data, string(e.Data))
	}
	return nil
}

func (s *listSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(s.data)
}

func (s *listSM) Restore(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = nil
	return json.Unmarshal(b, &s.data)
}

func (s *listSM) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.data...)
}

const testCluster = 0x51

type member struct {
	fs   *vfs.MemFS
	sm   *listSM
	node *Node
}

type cluster struct {
	t       *testing.T
	nw      *MemNetwork
	peers   []uint64
	m       map[uint64]*member
	every   uint64
	stopped bool
	// wrap, when set, wraps each node's transport (set before start).
	wrap func(id uint64, tr Transport) Transport
	// tickEvery, when set, makes nodes tick on their own (Config.TickInterval).
	tickEvery time.Duration
	// snapBytes, when set, is each node's Config.SnapshotBytes.
	snapBytes uint64
}

func newCluster(t *testing.T, n int, snapEvery uint64) *cluster {
	t.Helper()
	c := &cluster{t: t, nw: NewMemNetwork(), m: map[uint64]*member{}, every: snapEvery}
	for i := 1; i <= n; i++ {
		c.peers = append(c.peers, uint64(i))
	}
	for _, id := range c.peers {
		c.m[id] = &member{fs: vfs.NewMemFS()}
		if err := c.start(id, false); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stopAll)
	return c
}

func (c *cluster) config(id uint64, join bool) Config {
	mb := c.m[id]
	tr := c.nw.Transport(id)
	if c.wrap != nil {
		tr = c.wrap(id, tr)
	}
	return Config{
		ID: id, ClusterID: testCluster, Peers: c.peers, Join: join,
		FS: mb.fs, Dir: "/data/quorum",
		Transport: tr, StateMachine: mb.sm,
		ElectionTick: 10, HeartbeatTick: 1, SnapshotEvery: c.every,
		TickInterval: c.tickEvery, SnapshotBytes: c.snapBytes,
	}
}

func (c *cluster) start(id uint64, join bool) error {
	mb := c.m[id]
	mb.sm = &listSM{}
	n, err := Start(c.config(id, join))
	if err != nil {
		return err
	}
	mb.node = n
	c.nw.Attach(n)
	return nil
}

// crash stops id's process and simulates a power loss of its disk.
func (c *cluster) crash(id uint64, opts vfs.CrashOptions) {
	mb := c.m[id]
	c.nw.Detach(id)
	mb.fs.ProcessCrash()
	_ = mb.node.Stop()
	mb.node = nil
	mb.fs.Crash(opts)
}

func (c *cluster) stopAll() {
	for _, mb := range c.m {
		if mb.node != nil {
			_ = mb.node.Stop()
		}
	}
}

func (c *cluster) tick() {
	for _, mb := range c.m {
		if mb.node != nil {
			mb.node.Tick()
		}
	}
}

// waitFor ticks every live node until cond holds or the deadline passes.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		c.tick()
		time.Sleep(time.Millisecond)
	}
}

// leader waits until all live nodes in ids (all live ones if none) agree
// on one leader among them, and returns it.
func (c *cluster) leader(ids ...uint64) uint64 {
	c.t.Helper()
	if len(ids) == 0 {
		for id, mb := range c.m {
			if mb.node != nil {
				ids = append(ids, id)
			}
		}
	}
	var l uint64
	c.waitFor("one leader", func() bool {
		l = c.m[ids[0]].node.Leader()
		if l == 0 {
			return false
		}
		in := false
		for _, id := range ids {
			if c.m[id].node.Leader() != l {
				return false
			}
			in = in || id == l
		}
		return in
	})
	return l
}

func (c *cluster) propose(id uint64, data string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.m[id].node.Propose(ctx, []byte(data)) }()
	for {
		select {
		case err := <-errc:
			return err
		default:
			c.tick()
			time.Sleep(time.Millisecond)
		}
	}
}

func (c *cluster) mustPropose(id uint64, data ...string) {
	c.t.Helper()
	for _, d := range data {
		if err := c.propose(id, d); err != nil {
			c.t.Fatalf("propose %q on %d: %v", d, id, err)
		}
	}
}

// converge waits until every live node applied exactly want.
func (c *cluster) converge(want []string) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("all nodes to apply %d entries", len(want)), func() bool {
		for _, mb := range c.m {
			if mb.node != nil && !equal(mb.sm.list(), want) {
				return false
			}
		}
		return true
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func seq(prefix string, from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("%s%d", prefix, i))
	}
	return s
}

func TestThreeNodesElectAndReplicateInOrder(t *testing.T) {
	c := newCluster(t, 3, 0)
	l := c.leader()
	want := seq("e", 0, 20)
	c.mustPropose(l, want...)
	c.converge(want)
	for id := range c.m {
		if id == l {
			continue
		}
		var nl *NotLeaderError
		if err := c.propose(id, "x"); !errors.As(err, &nl) || nl.Leader != l {
			t.Fatalf("propose on follower %d: %v, want NotLeaderError{%d}", id, err, l)
		}
	}
	st, err := c.m[l].node.Status()
	if err != nil || st.Lead != l || st.Applied == 0 {
		t.Fatalf("status %+v %v", st.BasicStatus, err)
	}
}

func TestSingleVoterCommitsAlone(t *testing.T) {
	c := newCluster(t, 1, 0)
	l := c.leader()
	if l != 1 {
		t.Fatalf("leader %d", l)
	}
	c.mustPropose(1, "a", "b")
	c.converge([]string{"a", "b"})
	// Restart: the single node recovers its own state and leads again.
	c.crash(1, vfs.CrashOptions{})
	if err := c.start(1, false); err != nil {
		t.Fatal(err)
	}
	c.leader()
	c.mustPropose(1, "c")
	c.converge([]string{"a", "b", "c"})
}

func TestLeaderPowerLossKeepsCommitted(t *testing.T) {
	c := newCluster(t, 3, 0)
	l := c.leader()
	want := seq("a", 0, 10)
	c.mustPropose(l, want...)
	c.converge(want)
	c.crash(l, vfs.CrashOptions{})
	l2 := c.leader()
	if l2 == l {
		t.Fatalf("crashed node %d still leader", l)
	}
	more := seq("b", 0, 10)
	c.mustPropose(l2, more...)
	want = append(want, more...)
	if err := c.start(l, true); err != nil {
		t.Fatalf("restart after power loss: %v", err)
	}
	c.converge(want)
}

func TestPartitionedMinorityCannotCommit(t *testing.T) {
	c := newCluster(t, 3, 0)
	l := c.leader()
	c.mustPropose(l, "before")
	c.converge([]string{"before"})
	c.nw.Isolate(l)
	// The old leader steps down (CheckQuorum) and cannot commit.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	errc := make(chan error, 1)
	go func() { errc <- c.m[l].node.Propose(ctx, []byte("lost")) }()
	var others []uint64
	for id := range c.m {
		if id != l {
			others = append(others, id)
		}
	}
	l2 := c.leader(others...)
	c.mustPropose(l2, "after")
	err := <-errc
	cancel()
	if err == nil {
		t.Fatal("isolated leader committed a proposal")
	}
	c.waitFor("old leader to step down", func() bool { return c.m[l].node.Leader() != l })
	c.nw.Heal()
	c.converge([]string{"before", "after"})
}

func TestFarBehindCatchesUpFromSnapshot(t *testing.T) {
	c := newCluster(t, 3, 5)
	l := c.leader()
	var lag uint64
	for id := range c.m {
		if id != l {
			lag = id
			break
		}
	}
	c.nw.Isolate(lag)
	want := seq("s", 0, 30)
	c.mustPropose(l, want...)
	// The leader's log is compacted behind its snapshot.
	c.waitFor("compaction", func() bool {
		st, _ := c.m[l].node.Status()
		return st.Applied >= 30
	})
	// The leader no longer holds the entries the lagging node needs, so
	// only a snapshot (MsgSnap) can bring it up to date.
	lagLast, _ := c.m[lag].node.st.LastIndex()
	leadFirst, _ := c.m[l].node.st.FirstIndex()
	if leadFirst <= lagLast+1 {
		t.Fatalf("leader log starts at %d, lagging node has up to %d: no snapshot needed", leadFirst, lagLast)
	}
	c.nw.Heal()
	c.converge(want)
	if fi, err := c.m[lag].fs.ReadDir("/data/quorum"); err != nil || !hasSnap(fi) {
		t.Fatalf("lagging node has no snapshot file: %v", err)
	}
}

func hasSnap(des []os.DirEntry) bool {
	for _, de := range des {
		if strings.HasPrefix(de.Name(), snapPrefix) {
			return true
		}
	}
	return false
}

func TestTornWALTailIsTruncatedAndNodeRejoins(t *testing.T) {
	c := newCluster(t, 3, 0)
	l := c.leader()
	want := seq("t", 0, 10)
	c.mustPropose(l, want...)
	c.converge(want)
	var f uint64
	for id := range c.m {
		if id != l {
			f = id
			break
		}
	}
	// Unsynced garbage after the last record: a torn append.
	mb := c.m[f]
	c.nw.Detach(f)
	mb.fs.ProcessCrash()
	_ = mb.node.Stop()
	wal, err := mb.fs.ReadFile("/data/quorum/raft.wal")
	if err != nil {
		t.Fatal(err)
	}
	torn := append(wal, 0x20, 0, 0, 0, 1, 2, 3, 4, 1, 9, 9)
	if err := mb.fs.WriteFile("/data/quorum/raft.wal", torn); err != nil {
		t.Fatal(err)
	}
	if err := c.start(f, true); err != nil {
		t.Fatal(err)
	}
	if got := mb.node.st.Truncated; got != int64(len(torn)-len(wal)) {
		t.Fatalf("truncated %d bytes, want %d", got, len(torn)-len(wal))
	}
	c.mustPropose(l, "u")
	c.converge(append(want, "u"))
}

func TestRandomTornTailsAfterPowerLoss(t *testing.T) {
	c := newCluster(t, 3, 7)
	l := c.leader()
	r := rand.New(rand.NewPCG(1, 2))
	var want []string
	for round := 0; round < 3; round++ {
		more := seq(fmt.Sprintf("r%d-", round), 0, 8)
		c.mustPropose(l, more...)
		want = append(want, more...)
		c.converge(want)
		var f uint64
		for id := range c.m {
			if id != l {
				f = id
			}
		}
		c.crash(f, vfs.CrashOptions{Rand: r, TornTail: true, Garble: true})
		if err := c.start(f, true); err != nil {
			t.Fatalf("round %d restart: %v", round, err)
		}
		l = c.leader()
	}
	c.converge(want)
}

func TestIdentityAndAmnesiaRefused(t *testing.T) {
	fs := vfs.NewMemFS()
	base := Config{ID: 1, ClusterID: 7, Peers: []uint64{1, 2, 3}, FS: fs, Dir: "/q",
		Transport: NewMemNetwork().Transport(1), StateMachine: &listSM{}}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"join with empty log", func(c *Config) { c.Join = true }, ErrAmnesia},
		{"fresh start", func(c *Config) {}, nil},
		{"other cluster", func(c *Config) { c.ClusterID = 8 }, ErrIdentity},
		{"other node", func(c *Config) { c.ID = 2 }, ErrIdentity},
		{"restart", func(c *Config) { c.Join = true }, nil},
	} {
		cfg := base
		tc.mod(&cfg)
		n, err := Start(cfg)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if n != nil {
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The raft log lost but the identity file kept: amnesia even without Join.
	if err := fs.Remove("/q/raft.wal"); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(base); !errors.Is(err, ErrAmnesia) {
		t.Fatalf("lost log: %v, want ErrAmnesia", err)
	}
}

// A leader cut off with a proposal waiting fails it as soon as it steps
// down (outcome unknown, NotLeaderError), not at the proposer's deadline.
func TestDeposedLeaderFailsWaitingProposals(t *testing.T) {
	c := newCluster(t, 3, 0)
	l := c.leader()
	c.mustPropose(l, "before")
	c.nw.Isolate(l)
	errc := make(chan error, 1)
	go func() { errc <- c.m[l].node.Propose(context.Background(), []byte("pending")) }() // no deadline
	var err error
	c.waitFor("the waiting proposal to fail", func() bool {
		select {
		case err = <-errc:
			return true
		default:
			return false
		}
	})
	var nl *NotLeaderError
	if !errors.As(err, &nl) {
		t.Fatalf("deposed leader's proposal: %v, want NotLeaderError", err)
	}
	c.nw.Heal()
}

// A leader hands its role over on request (a clean shutdown) and the
// cluster goes on committing under the new one.
func TestTransferLeadership(t *testing.T) {
	c := newCluster(t, 3, 0)
	l := c.leader()
	c.mustPropose(l, "before")
	var to uint64 = 1
	if to == l {
		to = 2
	}
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		errc <- c.m[l].node.TransferLeadership(ctx, to)
	}()
	var err error
	c.waitFor("the transfer", func() bool {
		select {
		case err = <-errc:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if nl := c.leader(); nl != to {
		t.Fatalf("leader %d after transferring to %d", nl, to)
	}
	c.mustPropose(to, "after")
	c.converge([]string{"before", "after"})
}
