package controller

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// A broker whose process is gone, fenced before its session runs out.
//
// A broker's session lasts broker.session.timeout.ms (Kafka's 9 s) after
// its last heartbeat, so a SIGKILLed leader's partitions would wait that long
// for a new leader. But a process that dies has its sockets closed by its
// kernel at once: the connections it had opened to this node (its
// heartbeats, its raft messages) end, and its own listener stops taking
// connections. So when a connection a broker sent on ends (the peer server
// reports it, ConnectionClosed), no heartbeat of it arrives within a short
// grace, and a probe of its peer address finds no process of its
// incarnation there (the connection is refused, or a new process of the
// node answers), the controller fences it exactly as a session expiry does:
// the same records, through the quorum, under the decision lock, after
// checking again that no heartbeat came since the connection ended. A probe
// that is answered by the same incarnation, or not answered at all (a paused
// process: its kernel still accepts connections for it; a network
// partition; an overloaded node), fences nothing: the session timeout then
// decides, as before. A live broker whose connection ended (its client gave
// up on a request, an idle connection closed, a reconnect) answers the
// probe, and any heartbeat it sends after the connection ended stops the
// fast path.

// ProbeResult is what a probe of a broker's process found.
type ProbeResult int

const (
	// ProbeUnknown: no answer (timeout, unreachable, no address).
	ProbeUnknown ProbeResult = iota
	// ProbeAlive: the registered incarnation answered.
	ProbeAlive
	// ProbeGone: nothing listens at its address any more, or another
	// incarnation of the node does.
	ProbeGone
)

// Prober looks for a broker's registered process; the string says what it
// found (for the log).
type Prober func(ctx context.Context, b metadata.BrokerRegistration) (ProbeResult, string)

// liveness is the fast path's state (every node records closed
// connections, active or not: a controller elected after its predecessor's
// process died learns of it from the raft connections that ended).
type liveness struct {
	mu       sync.Mutex
	grace    time.Duration
	probe    Prober
	closedAt map[int32]time.Time // last end of a connection the broker sent on
	heardAt  map[int32]time.Time // last heartbeat or registration taken (not a new session's start)
	probing  map[int32]bool
	probedAt map[int32]time.Time
	wg       sync.WaitGroup
}

// probeInterval spaces the probes of one broker whose answer was unknown.
const probeInterval = 500 * time.Millisecond

// probeTimeout bounds one probe.
const probeTimeout = time.Second

// SetLivenessProbe turns the fast path on: grace is how long after a
// connection's end a heartbeat may still come before the broker's process
// is probed.
func (c *Controller) SetLivenessProbe(grace time.Duration, probe Prober) {
	c.live.mu.Lock()
	c.live.grace, c.live.probe = grace, probe
	c.live.mu.Unlock()
}

// ConnectionClosed records that a connection broker id sent on ended.
func (c *Controller) ConnectionClosed(id int32) {
	now := c.cfg.Now()
	c.live.mu.Lock()
	if c.live.closedAt == nil {
		c.live.closedAt = map[int32]time.Time{}
	}
	c.live.closedAt[id] = now
	c.live.mu.Unlock()
}

// heard records a heartbeat or registration taken from broker id (touch).
func (c *Controller) heard(id int32, at time.Time) {
	c.live.mu.Lock()
	if c.live.heardAt == nil {
		c.live.heardAt = map[int32]time.Time{}
	}
	c.live.heardAt[id] = at
	c.live.mu.Unlock()
}

// suspect reports whether broker id's connection ended after its last
// heartbeat, and when. Caller holds live.mu.
func (l *liveness) suspect(id int32) (time.Time, bool) {
	closed, ok := l.closedAt[id]
	if !ok || !closed.After(l.heardAt[id]) {
		return time.Time{}, false
	}
	return closed, true
}

// fenceGone starts a probe of every live broker whose connection ended more
// than the grace ago with no heartbeat since (one probe in flight per
// broker); a probe that finds the process gone fences it (fenceIfGone).
func (c *Controller) fenceGone(ctx context.Context) {
	im, err := c.begin()
	if err != nil {
		return
	}
	c.mu.Unlock()
	now := c.cfg.Now()
	self := int32(c.cfg.Quorum.ID())
	c.live.mu.Lock()
	defer c.live.mu.Unlock()
	if c.live.probe == nil {
		return
	}
	for _, b := range im.LiveBrokers() {
		if b.ID == self { // this process is alive
			continue
		}
		closed, ok := c.live.suspect(b.ID)
		if !ok || now.Sub(closed) < c.live.grace || c.live.probing[b.ID] ||
			now.Sub(c.live.probedAt[b.ID]) < probeInterval {
			continue
		}
		if c.live.probing == nil {
			c.live.probing, c.live.probedAt = map[int32]bool{}, map[int32]time.Time{}
		}
		c.live.probing[b.ID] = true
		reg := *b
		probe := c.live.probe
		c.live.wg.Add(1)
		go func() {
			defer c.live.wg.Done()
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			res, found := probe(pctx, reg)
			cancel()
			c.live.mu.Lock()
			c.live.probing[reg.ID] = false
			c.live.probedAt[reg.ID] = c.cfg.Now()
			if res == ProbeAlive && c.live.closedAt[reg.ID].Equal(closed) {
				delete(c.live.closedAt, reg.ID) // until a connection ends again
			}
			c.live.mu.Unlock()
			if res == ProbeAlive {
				c.cfg.Logger.Debug("controller: a broker's connection ended but its process answered", "broker", reg.ID, "found", found)
				return
			}
			if res == ProbeGone {
				c.fenceIfGone(ctx, reg, closed, found)
			}
		}()
	}
}

// fenceIfGone fences broker reg (its process is gone: found says how it was
// seen) unless it was fenced or registered again, or a heartbeat of it came
// after its connection ended at closed, meanwhile.
func (c *Controller) fenceIfGone(ctx context.Context, reg metadata.BrokerRegistration, closed time.Time, found string) {
	im, err := c.begin()
	if err != nil {
		return
	}
	defer c.mu.Unlock()
	b, ok := im.Broker(reg.ID)
	if !ok || b.Fenced || b.Epoch != reg.Epoch {
		return
	}
	c.live.mu.Lock()
	heard := c.live.heardAt[reg.ID]
	c.live.mu.Unlock()
	if !heard.Before(closed) {
		return // a heartbeat over a new connection: alive
	}
	recs := fenceRecords(im, b)
	if _, err := c.commit(ctx, recs...); err != nil {
		c.cfg.Logger.Warn("controller: fencing broker failed", "broker", b.ID, "err", err)
		return
	}
	now := c.cfg.Now()
	c.cfg.Logger.Warn("controller: broker fenced (its process is gone: its connection ended and "+found+")",
		"broker", b.ID, "epoch", b.Epoch, "connection_ended", now.Sub(closed).Round(time.Millisecond),
		"silent_for", now.Sub(heard).Round(time.Millisecond), "leaderships_moved", len(recs)-1)
}

// waitProbes waits for the probes in flight (Run's end).
func (c *Controller) waitProbes() { c.live.wg.Wait() }

// fenceRecords fences broker b and moves its leaderships (session expiry,
// a gone process).
func fenceRecords(im *metadata.Image, b *metadata.BrokerRegistration) []metadata.Record {
	recs := []metadata.Record{{Type: metadata.FenceBroker, BrokerID: b.ID, Epoch: b.Epoch}}
	fenced := *im
	fenced.Brokers = map[int32]*metadata.BrokerRegistration{}
	for id, r := range im.Brokers {
		fenced.Brokers[id] = r
	}
	fb := *b
	fb.Fenced = true
	fenced.Brokers[b.ID] = &fb
	return append(recs, leaveBroker(&fenced, b.ID)...)
}
