package quorum

import (
	"context"
	"sync"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// MemNetwork connects Nodes in one process (tests, dev clusters). Links can
// be cut one way or both; messages on a cut link are dropped.
type MemNetwork struct {
	mu    sync.Mutex
	nodes map[uint64]*Node
	cut   map[[2]uint64]bool
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[uint64]*Node{}, cut: map[[2]uint64]bool{}}
}

// Transport returns the Transport for node id.
func (nw *MemNetwork) Transport(id uint64) Transport { return memTransport{nw: nw, from: id} }

// Attach makes n reachable (replacing an earlier node with the same id).
func (nw *MemNetwork) Attach(n *Node) {
	nw.mu.Lock()
	nw.nodes[n.ID()] = n
	nw.mu.Unlock()
}

// Detach makes id unreachable.
func (nw *MemNetwork) Detach(id uint64) {
	nw.mu.Lock()
	delete(nw.nodes, id)
	nw.mu.Unlock()
}

// Cut drops messages from a to b.
func (nw *MemNetwork) Cut(a, b uint64) {
	nw.mu.Lock()
	nw.cut[[2]uint64{a, b}] = true
	nw.mu.Unlock()
}

// Isolate cuts every link to and from ids in group to ids outside it.
func (nw *MemNetwork) Isolate(group ...uint64) {
	in := map[uint64]bool{}
	for _, id := range group {
		in[id] = true
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for a := range nw.nodes {
		for b := range nw.nodes {
			if in[a] != in[b] {
				nw.cut[[2]uint64{a, b}] = true
			}
		}
	}
}

// Heal restores every link.
func (nw *MemNetwork) Heal() {
	nw.mu.Lock()
	nw.cut = map[[2]uint64]bool{}
	nw.mu.Unlock()
}

type memTransport struct {
	nw   *MemNetwork
	from uint64
}

func (t memTransport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		t.nw.mu.Lock()
		dst := t.nw.nodes[m.GetTo()]
		cut := t.nw.cut[[2]uint64{t.from, m.GetTo()}]
		t.nw.mu.Unlock()
		if dst == nil || cut {
			continue
		}
		// A copy: the receiver must not share memory with the sender.
		_ = dst.Step(context.Background(), proto.Clone(m).(*raftpb.Message))
	}
}
