package broker

import (
	"sync/atomic"
	"time"
)

// brokerLease is the broker's view of its session with the controller: the
// time at which it sent the last registration or heartbeat that the
// controller accepted. The controller fences a broker that has not
// heartbeated for broker.session.timeout.ms and moves its leaderships
// away; counting from the send time, this broker's view expires no later
// than the controller's, so by the time another broker may lead one of its
// partitions it no longer acts as their leader or as a coordinator
// (finding 11 and 12 of docs/reliability.md): reads of a stale high
// watermark or of stale committed offsets end with the session.
type brokerLease struct {
	renewed atomic.Int64 // unix nanoseconds; 0: never
	// need is the metadata offset this broker must have applied before a
	// session renewed after a lapse counts: while it was lapsed the
	// controller may have fenced it and moved its leaderships, which the
	// controller's image at the renewal holds.
	need atomic.Uint64
}

// renewAt records a session renewal by a request sent at sent, answered
// by a controller whose image was at offset; a renewal after a lapse
// counts once that image is applied (need).
func (l *brokerLease) renewAt(sent time.Time, timeout time.Duration, offset uint64) {
	if l.lapsed(timeout) {
		for {
			old := l.need.Load()
			if old >= offset || l.need.CompareAndSwap(old, offset) {
				break
			}
		}
	}
	l.renew(sent)
}

// renew records a session renewal by a request sent at sent.
func (l *brokerLease) renew(sent time.Time) {
	n := sent.UnixNano()
	for {
		old := l.renewed.Load()
		if old >= n || l.renewed.CompareAndSwap(old, n) {
			return
		}
	}
}

// lapsed reports whether the session has not been renewed for timeout.
// A broker that never registered has no leaderships to give up.
func (l *brokerLease) lapsed(timeout time.Duration) bool {
	n := l.renewed.Load()
	return n != 0 && time.Since(time.Unix(0, n)) > timeout
}

// sessionLapsed is the replica layer's lease check for this node.
func (c *clusterNode) sessionLapsed() bool {
	return c.lease.lapsed(c.cfg.sessionTimeout) || c.published.Load() < c.lease.need.Load()
}

// leadsInternal is a coordinator's check that this broker may act as the
// leader of partition p of its internal topic now (group.Options.Leads):
// it leads it and, on a cluster, its session with the controller holds.
func (b *Broker) leadsInternal(topic string) func(p int32) bool {
	return func(p int32) bool {
		part := b.replicas.Get(topic, p)
		return part != nil && part.CheckLeader(-1) == 0
	}
}
