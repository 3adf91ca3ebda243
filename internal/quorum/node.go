package quorum

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Entry is one committed application entry, as handed to StateMachine.Apply.
type Entry struct {
	Index uint64
	Term  uint64
	Data  []byte
}

// StateMachine is the application the quorum replicates. All calls come
// from the Node's single Ready-loop goroutine, in log order.
type StateMachine interface {
	// Apply applies committed entries in order. An error stops the node.
	Apply(ents []Entry) error
	// Snapshot returns the state after the last applied entry.
	Snapshot() ([]byte, error)
	// Restore replaces the state by a snapshot's data.
	Restore(data []byte) error
}

// Transport carries raft messages to peers. Send must not block for long
// (the Ready loop calls it); messages may be dropped, raft retries.
type Transport interface {
	Send(msgs []*raftpb.Message)
}

// SnapshotReporting is implemented by a Transport that learns whether a
// MsgSnap reached its peer (internal/peer sends snapshots on their own
// path and waits for the receiver's answer). Start hands it the node's
// report function; the Transport calls it once per MsgSnap, from any
// goroutine, with ok false when the snapshot was dropped or refused. It
// never blocks. With a Transport that does not implement it, the node
// reports every MsgSnap finished as soon as it is handed to Send.
type SnapshotReporting interface {
	SetSnapshotReporter(report func(to uint64, ok bool))
}

// Errors returned by Node.
var (
	ErrStopped = errors.New("quorum: node stopped")
	// ErrAmnesia: the node is configured to join an existing cluster but
	// its raft log is empty (lost or never written). Voting with an empty
	// log could elect a leader missing committed entries, so it refuses.
	ErrAmnesia = errors.New("quorum: raft log is empty but the node is configured to join an existing cluster; refusing to start as a voter with amnesia (restore the data directory, or remove and re-add the node)")
)

// NotLeaderError is returned by Propose on a node that does not lead.
// Leader is the known leader's id, 0 if none is known.
type NotLeaderError struct{ Leader uint64 }

func (e *NotLeaderError) Error() string {
	if e.Leader == 0 {
		return "quorum: not leader (leader unknown)"
	}
	return fmt.Sprintf("quorum: not leader (leader is %d)", e.Leader)
}

// Config configures a Node.
type Config struct {
	ID        uint64 // this node's id, non-zero
	ClusterID uint64 // the cluster id recorded in the data directory, non-zero
	// Peers are the voters of a new cluster (ids, including ID). Used only
	// when the storage is empty and Join is false.
	Peers []uint64
	// Join says this node belongs to an existing cluster: it never
	// bootstraps, and an empty raft log is refused with ErrAmnesia.
	Join bool
	// Observer starts a node that is not (yet) in the configuration: it
	// never bootstraps and may start with an empty raft log; the leader
	// adds it as a learner (ProposeConfChange) and replicates the log to
	// it, from a snapshot when compacted. It can be promoted to a voter
	// later. Peers is ignored.
	Observer bool

	FS  vfs.FS
	Dir string

	Transport    Transport
	StateMachine StateMachine

	ElectionTick  int // default 10
	HeartbeatTick int // default 1
	// TickInterval drives Tick from a real ticker when > 0; with 0 the
	// caller calls Node.Tick (tests do, so they need no real time).
	TickInterval time.Duration
	// SnapshotEvery takes a snapshot and compacts the log after this many
	// applied entries; 0 means 10000.
	SnapshotEvery uint64
	// SnapshotBytes also takes one once the entries applied since the last
	// hold this many bytes (Kafka's
	// metadata.log.max.record.bytes.between.snapshots); 0 means 20 MiB. A
	// few large batches (a topic of thousands of partitions, the fencing
	// of a broker leading 100,000) then do not all stay in the log for
	// every start to replay. One is also taken once they hold as many
	// bytes as the last snapshot (at least 1 MiB).
	SnapshotBytes uint64
	// Logger receives raft's log; nil discards it.
	Logger raft.Logger
}

type proposal struct {
	data []byte
	id   uint64
	done chan error
}

// Node runs one raft member: a RawNode, its Storage and the Ready loop.
type Node struct {
	cfg     Config
	st      *Storage
	rn      *raft.RawNode
	tickc   chan struct{}
	recvc   chan *raftpb.Message
	propc   chan proposal
	statusc chan chan raft.Status
	transc  chan uint64
	confc   chan confProposal
	// confPending is the proposal id of this node's last configuration
	// change (loop-owned); it is pending while its waiter is.
	confPending uint64
	confChanged bool // a configuration change was applied in this Ready
	// startedEmpty: the raft log was empty when the node started.
	startedEmpty bool
	// loneCampaign: once the committed log is applied (and so the
	// configuration known), campaign at once if this node is the only
	// voter.
	loneCampaign bool
	stopc        chan struct{}
	donec        chan struct{}
	leader       atomic.Uint64
	term         atomic.Uint64 // the raft term of the last HardState
	err          error         // why the loop ended; read after donec

	nextID  atomic.Uint64
	waiters map[uint64]chan error // loop-owned

	applied   uint64
	snapIndex uint64
	// snapBytes: bytes of the entries applied since the last snapshot
	// (loop-owned; SnapshotBytes).
	snapBytes uint64
	// snapSize: bytes of the last snapshot taken or restored (loop-owned).
	snapSize  uint64
	confState *raftpb.ConfState
	stopOnce  sync.Once

	// snapReports: outcomes of MsgSnap sends reported by the Transport
	// (SnapshotReporting), handed to raft by the loop; snapNotify wakes it.
	snapMu        sync.Mutex
	snapReports   []snapReport
	snapNotify    chan struct{}
	transportSnap bool // the Transport reports snapshot outcomes
}

type snapReport struct {
	to uint64
	ok bool
}

// reportSnapshot records the outcome of a MsgSnap send for the loop; it
// never blocks and never loses a report (raft keeps a follower paused in
// snapshot state until it hears one).
func (n *Node) reportSnapshot(to uint64, ok bool) {
	n.snapMu.Lock()
	n.snapReports = append(n.snapReports, snapReport{to: to, ok: ok})
	n.snapMu.Unlock()
	select {
	case n.snapNotify <- struct{}{}:
	default:
	}
}

// takeSnapReports hands the recorded snapshot outcomes to raft (loop only).
func (n *Node) takeSnapReports() {
	n.snapMu.Lock()
	reps := n.snapReports
	n.snapReports = nil
	n.snapMu.Unlock()
	for _, r := range reps {
		st := raft.SnapshotFinish
		if !r.ok {
			st = raft.SnapshotFailure
		}
		n.rn.ReportSnapshot(r.to, st)
	}
}

// envelope: [8-byte proposal id][data]. The id lets the proposer wait for
// its own entry; entries shorter than 8 bytes are raft's empty entries.
const envHeader = 8

// Start opens the storage, refuses identity mismatch and amnesia, restores
// the last snapshot into the state machine and starts the Ready loop.
func Start(cfg Config) (*Node, error) {
	if cfg.ElectionTick == 0 {
		cfg.ElectionTick = 10
	}
	if cfg.HeartbeatTick == 0 {
		cfg.HeartbeatTick = 1
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = 10000
	}
	if cfg.SnapshotBytes == 0 {
		cfg.SnapshotBytes = 20 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}
	}
	st, err := OpenStorage(cfg.FS, cfg.Dir, cfg.ClusterID, cfg.ID)
	if err != nil {
		return nil, err
	}
	if st.Empty() && !cfg.Observer && (cfg.Join || !st.Fresh()) {
		st.Close()
		return nil, fmt.Errorf("%w (node %d, dir %s)", ErrAmnesia, cfg.ID, cfg.Dir)
	}
	if err := st.Claim(); err != nil {
		st.Close()
		return nil, err
	}
	n := &Node{
		cfg: cfg, st: st,
		tickc:   make(chan struct{}, 128),
		recvc:   make(chan *raftpb.Message, 4096),
		propc:   make(chan proposal),
		statusc: make(chan chan raft.Status),
		transc:  make(chan uint64),
		confc:   make(chan confProposal),
		stopc:   make(chan struct{}),
		donec:   make(chan struct{}),
		waiters: map[uint64]chan error{},

		snapNotify: make(chan struct{}, 1),
	}
	n.nextID.Store(uint64(time.Now().UnixNano()))
	snap, err := st.Snapshot()
	if err != nil {
		st.Close()
		return nil, err
	}
	if !raft.IsEmptySnap(snap) {
		if err := cfg.StateMachine.Restore(snap.GetData()); err != nil {
			st.Close()
			return nil, fmt.Errorf("quorum: restore snapshot %d: %w", snap.GetMetadata().GetIndex(), err)
		}
		n.applied = snap.GetMetadata().GetIndex()
		n.snapIndex = n.applied
		n.snapSize = uint64(len(snap.GetData()))
		n.confState = snap.GetMetadata().GetConfState()
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              cfg.ID,
		ElectionTick:    cfg.ElectionTick,
		HeartbeatTick:   cfg.HeartbeatTick,
		Storage:         st,
		Applied:         n.applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		CheckQuorum:     true,
		PreVote:         true,
		// A leader removed or demoted by a configuration change steps
		// down at once, so the remaining voters elect a leader.
		StepDownOnRemoval: true,
		Logger:            cfg.Logger,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	if st.Empty() && !cfg.Observer {
		if len(cfg.Peers) == 0 {
			st.Close()
			return nil, errors.New("quorum: a new cluster needs Peers")
		}
		peers := make([]raft.Peer, len(cfg.Peers))
		for i, id := range cfg.Peers {
			peers[i] = raft.Peer{ID: id}
		}
		if err := rn.Bootstrap(peers); err != nil {
			st.Close()
			return nil, err
		}
	}
	n.rn = rn
	n.startedEmpty = st.Empty()
	// The only voter need not wait an election timeout: its own vote is a
	// majority. Raft neither campaigns while a configuration change is
	// committed but not applied nor knows the configuration of a restarted
	// node before its log is applied, so the run loop decides once the
	// committed entries are applied (raft's own election then).
	n.loneCampaign = true
	if sr, ok := cfg.Transport.(SnapshotReporting); ok {
		sr.SetSnapshotReporter(n.reportSnapshot)
		n.transportSnap = true
	}
	go n.run()
	return n, nil
}

// Tick advances raft's logical clock by one tick.
func (n *Node) Tick() {
	select {
	case n.tickc <- struct{}{}:
	case <-n.stopc:
	default: // the loop is behind; a lost tick only slows timeouts
	}
}

// Step hands a message received from a peer to raft. It never blocks for
// long: when the inbox is full the message is dropped (raft retries).
func (n *Node) Step(ctx context.Context, m *raftpb.Message) error {
	select {
	case n.recvc <- m:
		return nil
	case <-n.stopc:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// Leader returns the leader this node knows of, 0 if none.
func (n *Node) Leader() uint64 { return n.leader.Load() }

// Term returns the raft term this node is in (as last persisted). A node
// that leads in a new term has lost and regained the lead in between.
func (n *Node) Term() uint64 { return n.term.Load() }

// ID returns the node's id.
func (n *Node) ID() uint64 { return n.cfg.ID }

// Status returns raft's status, taken in the Ready loop.
func (n *Node) Status() (raft.Status, error) {
	c := make(chan raft.Status, 1)
	select {
	case n.statusc <- c:
		return <-c, nil
	case <-n.donec:
		return raft.Status{}, ErrStopped
	}
}

// Propose replicates data and returns once it is committed and applied by
// this node's StateMachine. It fails with *NotLeaderError on a follower,
// ErrStopped, or the context's error (the entry may still commit later).
func (n *Node) Propose(ctx context.Context, data []byte) error {
	if l := n.leader.Load(); l != n.cfg.ID {
		return &NotLeaderError{Leader: l}
	}
	id := n.nextID.Add(1)
	env := make([]byte, envHeader+len(data))
	binary.BigEndian.PutUint64(env, id)
	copy(env[envHeader:], data)
	p := proposal{data: env, id: id, done: make(chan error, 1)}
	select {
	case n.propc <- p:
	case <-n.donec:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.done:
		return err
	case <-n.donec:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TransferLeadership asks raft to hand this leader's role to voter to (a
// clean shutdown: the next leader is elected at once instead of after an
// election timeout) and waits until another leader is known or ctx ends.
func (n *Node) TransferLeadership(ctx context.Context, to uint64) error {
	select {
	case n.transc <- to:
	case <-n.donec:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for n.leader.Load() == n.cfg.ID {
		select {
		case <-t.C:
		case <-n.donec:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stop ends the Ready loop and closes the storage. It returns the error
// that ended the loop, if any other than Stop.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { close(n.stopc) })
	<-n.donec
	return n.err
}

// Done is closed when the loop has ended.
func (n *Node) Done() <-chan struct{} { return n.donec }

func (n *Node) run() {
	defer close(n.donec)
	defer n.st.Close()
	defer func() {
		for id, c := range n.waiters {
			c <- ErrStopped
			delete(n.waiters, id)
		}
	}()
	var tc <-chan time.Time
	if n.cfg.TickInterval > 0 {
		t := time.NewTicker(n.cfg.TickInterval)
		defer t.Stop()
		tc = t.C
	}
	for {
		for n.rn.HasReady() {
			if err := n.handleReady(); err != nil {
				n.err = err
				n.cfg.Logger.Errorf("quorum: node %d stops: %v", n.cfg.ID, err)
				return
			}
		}
		if n.loneCampaign {
			if st := n.rn.Status(); st.Applied >= st.HardState.GetCommit() {
				n.loneCampaign = false
				v := st.Config.Voters.IDs()
				if _, self := v[n.cfg.ID]; self && len(v) == 1 && st.RaftState != raft.StateLeader {
					_ = n.rn.Campaign()
					continue
				}
			}
		}
		select {
		case <-n.stopc:
			return
		case <-tc:
			n.rn.Tick()
		case <-n.tickc:
			n.rn.Tick()
		case m := <-n.recvc:
			if n.beyondLog(m) {
				break
			}
			_ = n.rn.Step(m) // stale or unknown-peer messages are refused; fine
		case p := <-n.propc:
			if err := n.rn.Propose(p.data); err != nil {
				if errors.Is(err, raft.ErrProposalDropped) {
					err = &NotLeaderError{Leader: n.leader.Load()}
				}
				p.done <- err
			} else {
				n.waiters[p.id] = p.done
			}
		case c := <-n.statusc:
			c <- n.rn.Status()
		case to := <-n.transc:
			n.rn.TransferLeader(to)
		case p := <-n.confc:
			n.proposeConfChange(p)
		case <-n.snapNotify:
			n.takeSnapReports()
		}
	}
}

// handleReady is the durability order: persist snapshot, entries and
// HardState (fsync), then send messages, then apply, then Advance.
func (n *Node) handleReady() error {
	rd := n.rn.Ready()
	if rd.SoftState != nil {
		was := n.leader.Swap(rd.SoftState.Lead)
		if was == n.cfg.ID && rd.SoftState.Lead != n.cfg.ID {
			// Deposed: its waiting proposals may or may not commit
			// under the new leader. They fail now (outcome unknown,
			// as NotLeaderError) rather than hold their proposers until
			// their deadlines; what did commit is applied all the same.
			for id, c := range n.waiters {
				c <- &NotLeaderError{Leader: rd.SoftState.Lead}
				delete(n.waiters, id)
			}
		}
	}
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		if old := n.term.Swap(rd.HardState.GetTerm()); old != 0 && old != rd.HardState.GetTerm() {
			// A new term: every waiting proposal is from an older one
			// (proposals are taken only between Readys), so its outcome
			// is unknown here; the same answer as a deposed leader's.
			for id, c := range n.waiters {
				c <- &NotLeaderError{Leader: n.leader.Load()}
				delete(n.waiters, id)
			}
		}
	}
	if err := n.st.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	if rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.cfg.StateMachine.Restore(rd.Snapshot.GetData()); err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
		md := rd.Snapshot.GetMetadata()
		n.applied, n.snapIndex, n.confState = md.GetIndex(), md.GetIndex(), md.GetConfState()
		n.snapBytes, n.snapSize = 0, uint64(len(rd.Snapshot.GetData()))
	}
	if len(rd.Messages) > 0 {
		n.cfg.Transport.Send(rd.Messages)
		for _, m := range rd.Messages {
			if m.GetType() == raftpb.MsgSnap && !n.transportSnap {
				// This Transport does not say whether the snapshot
				// arrived (MemNetwork steps it at once). Reporting it
				// finished is safe even if it was dropped: raft then
				// probes the follower and sends a new snapshot when it
				// must. internal/peer reports the real outcome
				// (SnapshotReporting).
				n.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
			}
		}
	}
	if err := n.apply(rd.CommittedEntries); err != nil {
		return err
	}
	n.rn.Advance(rd)
	// After a configuration change, a compacted log's next snapshot must
	// hold the new member: raft ignores a snapshot whose ConfState does
	// not name the receiving node, so a node added after the last
	// snapshot could never catch up from it.
	forced := n.confChanged && n.snapIndex > 0 && n.applied > n.snapIndex
	n.confChanged = false
	// By size: once the entries since the last snapshot hold
	// SnapshotBytes, or as many bytes as that snapshot (at least
	// minRelativeSnapshotBytes), so that a start never replays more than it
	// restores (a broker leading 100,000 partitions writes two batches of
	// that size at each restart, its fencing and unfencing).
	bySize := n.applied > n.snapIndex && (n.snapBytes >= n.cfg.SnapshotBytes ||
		n.snapSize > 0 && n.snapBytes >= max(n.snapSize, minRelativeSnapshotBytes))
	if forced || bySize || n.applied-n.snapIndex >= n.cfg.SnapshotEvery {
		data, err := n.cfg.StateMachine.Snapshot()
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		if err := n.st.CreateSnapshot(n.applied, n.confState, data); err != nil {
			return fmt.Errorf("save snapshot: %w", err)
		}
		n.snapIndex = n.applied
		n.snapBytes, n.snapSize = 0, uint64(len(data))
	}
	return nil
}

// minRelativeSnapshotBytes is the least the entries since the last snapshot
// must hold for a snapshot by relative size (a small image's snapshot
// would otherwise be taken again after every few entries).
const minRelativeSnapshotBytes = 1 << 20

func (n *Node) apply(ents []*raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	var batch []Entry
	var done []uint64
	for _, e := range ents {
		if e.GetIndex() <= n.applied {
			continue
		}
		switch e.GetType() {
		case raftpb.EntryNormal:
			d := e.GetData()
			if len(d) < envHeader {
				break
			}
			batch = append(batch, Entry{Index: e.GetIndex(), Term: e.GetTerm(), Data: d[envHeader:]})
			n.snapBytes += uint64(len(d))
			done = append(done, binary.BigEndian.Uint64(d))
		case raftpb.EntryConfChange:
			cc := &raftpb.ConfChange{}
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				return fmt.Errorf("conf change %d: %w", e.GetIndex(), err)
			}
			n.confState = n.rn.ApplyConfChange(cc)
			n.confChanged = true
		case raftpb.EntryConfChangeV2:
			cc := &raftpb.ConfChangeV2{}
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				return fmt.Errorf("conf change %d: %w", e.GetIndex(), err)
			}
			n.confState = n.rn.ApplyConfChange(cc)
			n.confChanged = true
			if ctx := cc.GetContext(); len(ctx) == envHeader {
				done = append(done, binary.BigEndian.Uint64(ctx))
			}
		}
		n.applied = e.GetIndex()
	}
	if len(batch) > 0 {
		if err := n.cfg.StateMachine.Apply(batch); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
	}
	for _, id := range done {
		if c, ok := n.waiters[id]; ok {
			c <- nil
			delete(n.waiters, id)
		}
	}
	return nil
}

// StartedEmpty reports whether the raft log was empty when the node
// started (a new member, or one that lost its log).
func (n *Node) StartedEmpty() bool { return n.startedEmpty }

// beyondLog reports a heartbeat whose commit index lies beyond this node's
// log. Raft sends a follower at most the commit index it knows the follower
// holds, so such a heartbeat is stale: sent while the leader still counted
// on a log this node no longer has (a member that lost its log and was
// reset, see ProposeConfChange). etcd raft would panic on it; dropping it
// is a lost message, which raft tolerates. Everything is persisted when a
// message is stepped (the loop handles every Ready first), so the storage's
// last index is the log's.
func (n *Node) beyondLog(m *raftpb.Message) bool {
	if m.GetType() != raftpb.MsgHeartbeat {
		return false
	}
	last, err := n.st.LastIndex()
	if err != nil || m.GetCommit() <= last {
		return false
	}
	n.cfg.Logger.Warningf("quorum: node %d drops a heartbeat from %d with commit %d beyond its log (last index %d): stale",
		n.cfg.ID, m.GetFrom(), m.GetCommit(), last)
	return true
}
