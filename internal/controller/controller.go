// Package controller makes the cluster's metadata decisions and writes them
// to the quorum: broker registration, liveness and fencing, placement of
// new topics and partitions, leader changes when a broker is fenced or
// comes back, topic config changes and producer-id blocks.
//
// Every node of the quorum runs a Controller; only the one on the quorum's
// leader is active. It becomes active only after a no-op record of its own
// has been committed and applied, so its image holds every record committed
// before it (a new raft leader's log has them all once its first entry
// commits). Decisions are taken one at a time under a lock, each against the
// image that the previous one produced, and answered only once committed.
// A request to a node that is not the active controller gets ErrNotController
// with the leader it knows of.
//
// Broker liveness is KRaft's: a broker registers (a new broker epoch, the
// record's offset, fenced), heartbeats every broker.heartbeat.interval.ms
// with the metadata offset it has applied, is unfenced once that offset
// reaches its registration, and is fenced by a committed record when no
// heartbeat came for broker.session.timeout.ms, or sooner when its process
// is seen to be gone (liveness.go). Heartbeat times live in the
// active controller's memory only; a new controller gives every broker a
// full session from the moment it became active.
package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/quorum"
)

// Quorum is what the controller needs of the quorum node.
type Quorum interface {
	ID() uint64
	Leader() uint64
	Term() uint64
	Propose(ctx context.Context, data []byte) error
}

// Error is a refusal with a Kafka error code.
type Error struct {
	Code int16
	Msg  string
	// Leader is the known quorum leader for NOT_CONTROLLER (0: unknown).
	Leader uint64
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	if k := kerr.ErrorForCode(e.Code); k != nil {
		return k.Error()
	}
	return fmt.Sprintf("error code %d", e.Code)
}

func errorf(k *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: k.Code, Msg: fmt.Sprintf(format, args...)}
}

// Config configures a Controller.
type Config struct {
	Quorum Quorum
	Store  *metadata.Store
	Logger *slog.Logger
	// SessionTimeout is broker.session.timeout.ms.
	SessionTimeout time.Duration
	// ProducerIDBlock is the size of the producer-id blocks handed out.
	ProducerIDBlock int64
	// MaxReplicationFactor bounds CreateTopics' replication factor (1 until
	// partitions replicate).
	MaxReplicationFactor int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// RebalanceInterval, when > 0, moves leadership back to preferred
	// replicas that are live and in sync at this interval
	// (auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds).
	RebalanceInterval time.Duration
	// UncleanLeaderElection is unclean.leader.election.enable of this
	// node's server.properties (topic configs and dynamic broker configs
	// override it; unclean.go).
	UncleanLeaderElection bool
	// MinInsyncReplicas is min.insync.replicas of this node's
	// server.properties, for eligible leader replicas (elr.go).
	MinInsyncReplicas int
	// BootstrapRecords are committed with the cluster id of a new cluster,
	// in the same entry (SCRAM credentials of `sluice format --add-scram`).
	BootstrapRecords []metadata.Record
}

// Controller is one node's controller.
type Controller struct {
	cfg Config

	mu     sync.Mutex // one decision at a time
	active bool       // the barrier of this leadership has been applied
	term   uint64     // the raft term this node became active in

	hbMu       sync.Mutex
	heartbeats map[int32]time.Time // last heartbeat per broker id (active only)

	lastRebalance time.Time

	live liveness // liveness.go

	// elrUnclean: brokers whose registration in the batch being committed
	// follows an unclean shutdown; withELR keeps them out of the ELR
	// (elr_unclean.go). Set and cleared under mu.
	elrUnclean map[int32]bool
}

// New returns a controller; Run drives it.
func New(cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ProducerIDBlock <= 0 {
		cfg.ProducerIDBlock = 1000
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.MaxReplicationFactor <= 0 {
		cfg.MaxReplicationFactor = 1
	}
	return &Controller{cfg: cfg, heartbeats: map[int32]time.Time{}}
}

// Active reports whether this node is the active controller.
func (c *Controller) Active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active && c.cfg.Quorum.Leader() == c.cfg.Quorum.ID()
}

// Run watches leadership and broker sessions until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.waitProbes()
			return
		case <-t.C:
		}
		c.step(ctx)
	}
}

// step is one round of Run: take or give up the controller role, then
// fence brokers whose session expired.
func (c *Controller) step(ctx context.Context) {
	q := c.cfg.Quorum
	leading := q.Leader() == q.ID()
	c.mu.Lock()
	if !leading || (c.active && q.Term() != c.term) {
		// Not leading, or leading again in a newer term (the lead was
		// lost and regained between two steps): in-memory state such as
		// heartbeat times is stale; a new leadership starts afresh.
		if c.active {
			c.cfg.Logger.Info("controller: no longer the active controller", "leader", q.Leader(), "term", q.Term())
		}
		c.active = false
		if !leading {
			c.mu.Unlock()
			return
		}
	}
	if !c.active {
		if err := c.becomeActive(ctx); err != nil {
			c.mu.Unlock()
			c.cfg.Logger.Warn("controller: cannot become active yet", "err", err)
			return
		}
	}
	c.mu.Unlock()
	c.fenceExpired(ctx)
	c.fenceGone(ctx) // liveness.go
	c.rebalance(ctx)
	c.completeReassignments(ctx)
	c.elrElections(ctx) // elr.go
	c.uncleanElections(ctx)
}

// rebalance gives partitions back to their preferred replicas, every
// RebalanceInterval.
func (c *Controller) rebalance(ctx context.Context) {
	if c.cfg.RebalanceInterval <= 0 {
		return
	}
	im, err := c.begin()
	if err != nil {
		return
	}
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.lastRebalance.IsZero() {
		c.lastRebalance = now
	}
	if now.Sub(c.lastRebalance) < c.cfg.RebalanceInterval {
		return
	}
	c.lastRebalance = now
	recs := preferredLeaders(im)
	if len(recs) == 0 {
		return
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		c.cfg.Logger.Warn("controller: preferred leader election failed", "err", err)
		return
	}
	c.cfg.Logger.Info("controller: leadership moved back to preferred replicas", "partitions", len(recs))
}

// becomeActive commits a barrier (and on a new cluster its id and its
// finalized feature levels, features.Defaults). Caller holds mu.
func (c *Controller) becomeActive(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	term := c.cfg.Quorum.Term()
	if err := c.cfg.Quorum.Propose(pctx, metadata.Batch{Records: []metadata.Record{{Type: metadata.Noop}}}.Encode()); err != nil {
		return err
	}
	// The barrier is applied, so is every earlier record: no cluster id
	// means a new cluster, never one whose log this node has not applied
	// yet (which must keep its feature levels).
	if c.cfg.Store.Image().ClusterID == "" {
		recs := []metadata.Record{{Type: metadata.SetClusterID, ClusterID: newClusterID()},
			{Type: metadata.SetFeatures, Features: features.Defaults()}}
		recs = append(recs, c.cfg.BootstrapRecords...)
		if err := c.cfg.Quorum.Propose(pctx, metadata.Batch{Records: recs}.Encode()); err != nil {
			return err
		}
	}
	now := c.cfg.Now()
	c.hbMu.Lock()
	clear(c.heartbeats)
	for id := range c.cfg.Store.Image().Brokers {
		c.heartbeats[id] = now
	}
	c.hbMu.Unlock()
	if c.cfg.Quorum.Term() != term || c.cfg.Quorum.Leader() != c.cfg.Quorum.ID() {
		return errors.New("leadership changed while becoming active")
	}
	c.term = term
	c.active = true
	c.cfg.Logger.Info("controller: active", "term", term, "node", c.cfg.Quorum.ID(), "metadata_offset", c.cfg.Store.Image().Offset)
	return nil
}

// begin takes the decision lock on the active controller, or fails with
// NOT_CONTROLLER.
func (c *Controller) begin() (*metadata.Image, error) {
	c.mu.Lock()
	q := c.cfg.Quorum
	if !c.active || q.Leader() != q.ID() || q.Term() != c.term {
		c.mu.Unlock()
		leader := q.Leader()
		if leader == q.ID() {
			leader = 0 // elected but not yet active
		}
		return nil, &Error{Code: kerr.NotController.Code, Msg: "this node is not the active controller", Leader: leader}
	}
	return c.cfg.Store.Image(), nil
}

// commit proposes records and returns the offset at which they were
// applied. Caller holds mu (from begin).
func (c *Controller) commit(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	recs = c.withELR(recs) // elr.go
	b := metadata.Batch{Records: recs}
	data := b.Encode()
	// Applied here as it is, not decoded again (recs is not changed after).
	forget := c.cfg.Store.Proposed(data, b)
	defer forget()
	if err := c.cfg.Quorum.Propose(pctx, data); err != nil {
		var nl *quorum.NotLeaderError
		if errors.As(err, &nl) || errors.Is(err, quorum.ErrStopped) {
			c.active = false
			return 0, &Error{Code: kerr.NotController.Code, Msg: "lost the controller role: " + err.Error()}
		}
		return 0, &Error{Code: kerr.RequestTimedOut.Code, Msg: "metadata change not committed: " + err.Error()}
	}
	return c.cfg.Store.Image().Offset, nil
}

func newClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func newTopicID(im *metadata.Image) metadata.ID {
	for {
		var id metadata.ID
		rand.Read(id[:])
		if _, used := im.TopicsByID[id]; !used && id != (metadata.ID{}) {
			return id
		}
	}
}

// leaveBroker returns the partition changes that take broker id out of
// leadership and in-sync sets (it was fenced): each partition it leads gets
// the first other live in-sync replica, in replica order, as leader, or
// none; id leaves every in-sync set unless it is its last member (kept so
// that it can lead again when it returns: no unclean election).
func leaveBroker(im *metadata.Image, id int32) []metadata.Record {
	return leaveBrokerKeeping(im, id, false)
}

// leaveBrokerKeeping is leaveBroker; with keepSole, the partitions that id
// leads as their only in-sync replica are left as they are (no other
// replica could lead them): the unfencing of id renews those leaderships
// (returnBroker), in one change each instead of two (requests.go,
// Register).
func leaveBrokerKeeping(im *metadata.Image, id int32, keepSole bool) []metadata.Record {
	n := changesCap(im, func(p *metadata.Partition) bool {
		return (p.Leader == id && !(keepSole && soleLeader(p, id))) || slices.Contains(p.ISR, id) && len(p.ISR) > 1
	})
	out := make([]metadata.Record, 0, n)
	changes := make([]metadata.Partition, 0, n) // the records' changes, allocated once
	for _, t := range im.SortedTopics() {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if p.Leader != id && !(slices.Contains(p.ISR, id) && len(p.ISR) > 1) {
				continue
			}
			if keepSole && soleLeader(p, id) {
				continue
			}
			np := *p
			// The ISR without id; a sole member stays (the slice is
			// shared: images never modify one in place).
			if len(p.ISR) > 1 && slices.Contains(p.ISR, id) {
				np.ISR = make([]int32, 0, len(p.ISR)-1)
				for _, r := range p.ISR {
					if r != id {
						np.ISR = append(np.ISR, r)
					}
				}
			}
			if len(np.ISR) == 0 {
				np.ISR = []int32{id}
			}
			if p.Leader == id {
				np.Leader = metadata.NoLeader
				for _, r := range p.Replicas {
					if r != id && slices.Contains(np.ISR, r) && im.IsLive(r) {
						np.Leader = r
						break
					}
				}
				np.LeaderEpoch++
			}
			np.PartitionEpoch++
			changes = append(changes, np)
			out = append(out, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name,
				TopicID: t.ID, Partition: int32(i), Change: &changes[len(changes)-1]})
		}
	}
	return out
}

// soleLeader reports whether broker id leads p as its only in-sync replica.
func soleLeader(p *metadata.Partition, id int32) bool {
	return p.Leader == id && len(p.ISR) == 1 && p.ISR[0] == id
}

// returnBroker returns the partition changes that let broker id lead again
// the leaderless partitions whose in-sync set holds it, or, with an empty
// in-sync set, whose eligible leader replicas hold it (withELR elects it,
// elr.go). A partition that id, fenced, still leads is one whose
// leadership its registration kept (leaveBrokerKeeping; the controller
// never elects a fenced broker): it is renewed with a new leader epoch, as
// an election would, so that the leadership of this incarnation of id,
// whose log may have lost what it had not synced, is told apart from the
// last one's (KIP-320's truncation detection).
func returnBroker(im *metadata.Image, id int32) []metadata.Record {
	n := changesCap(im, func(p *metadata.Partition) bool {
		return p.Leader == metadata.NoLeader || p.Leader == id
	})
	out := make([]metadata.Record, 0, n)
	changes := make([]metadata.Partition, 0, n) // the records' changes, allocated once
	elr := elrEnabled(im)                       // (resolves the finalized features)
	for _, t := range im.SortedTopics() {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if p.Leader != metadata.NoLeader && p.Leader != id {
				continue
			}
			np := *p
			switch {
			case p.Leader == id:
				np.LeaderEpoch++
			case slices.Contains(p.ISR, id):
				np.Leader = id
				np.LeaderEpoch++
			case elr && len(p.ISR) == 0 && (slices.Contains(p.ELR, id) || lastKnownLeader(*p, id)):
			default:
				continue
			}
			np.PartitionEpoch++
			changes = append(changes, np)
			out = append(out, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name,
				TopicID: t.ID, Partition: int32(i), Change: &changes[len(changes)-1]})
		}
	}
	return out
}

// fenceExpired fences every unfenced broker whose session expired.
func (c *Controller) fenceExpired(ctx context.Context) {
	im, err := c.begin()
	if err != nil {
		return
	}
	defer c.mu.Unlock()
	now := c.cfg.Now()
	for _, b := range im.LiveBrokers() {
		c.hbMu.Lock()
		last, ok := c.heartbeats[b.ID]
		if !ok {
			c.heartbeats[b.ID] = now
			last = now
		}
		c.hbMu.Unlock()
		if now.Sub(last) <= c.cfg.SessionTimeout {
			continue
		}
		recs := fenceRecords(im, b) // liveness.go
		if _, err := c.commit(ctx, recs...); err != nil {
			c.cfg.Logger.Warn("controller: fencing broker failed", "broker", b.ID, "err", err)
			return
		}
		c.cfg.Logger.Warn("controller: broker fenced (no heartbeat within broker.session.timeout.ms)",
			"broker", b.ID, "epoch", b.Epoch, "silent_for", now.Sub(last).Round(time.Millisecond),
			"leaderships_moved", len(recs)-1)
		im = c.cfg.Store.Image()
	}
}
