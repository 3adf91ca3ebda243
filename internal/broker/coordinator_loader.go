package broker

import (
	"sync"

	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/replica"
)

// orderedLoader runs a coordinator's load and unload events for the
// partitions of its internal topic in the order they happened, without
// holding up the caller when the coordinator is busy. The caller is the
// metadata publisher (replica listeners): a group's write holds the group
// coordinator's lock while it waits for its in-sync replicas, which may
// need this very metadata change to be applied first (a new leader, a
// shrunk in-sync set); loading under that lock from the publisher stalled
// both until the write timed out, again and again (an open stall of the
// fault checker, docs/reliability.md). As Apache Kafka loads a coordinator
// partition on its own scheduler thread, an event that cannot take the lock
// at once, and every event after it until the queue drains, runs on a
// goroutine of its own, one at a time. Until a partition is loaded its
// groups are answered NOT_COORDINATOR, and clients retry.
type orderedLoader struct {
	mu      sync.Mutex
	pending []func()
	running bool
}

// run does the event now when nothing is queued and try, which must not
// block, reports it done; otherwise it queues later, to run after every
// event queued before it.
func (l *orderedLoader) run(try func() bool, later func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.running && try() {
		return
	}
	l.pending = append(l.pending, later)
	if !l.running {
		l.running = true
		go l.drain()
	}
}

func (l *orderedLoader) drain() {
	for {
		l.mu.Lock()
		if len(l.pending) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		f := l.pending[0]
		l.pending = l.pending[1:]
		l.mu.Unlock()
		f()
	}
}

// groupPartitionListener makes the group coordinator (and the share groups
// it holds) follow the leadership of __consumer_offsets' partitions through
// an orderedLoader.
func (b *Broker) groupPartitionListener() replica.Listener {
	var l orderedLoader
	return func(e replica.Event) error {
		if e.Partition.Topic() != group.OffsetsTopic {
			return nil
		}
		p := e.Partition.Index()
		if e.Kind != replica.BecameLeader {
			l.run(func() bool { return b.groups.TryUnloadPartition(p) }, func() { b.groups.UnloadPartition(p) })
			return nil
		}
		var err error
		l.run(func() bool {
			done, shares, lerr := b.groups.TryLoadPartition(p)
			if done && lerr == nil && b.shares != nil {
				b.shares.LoadMembership(shares)
			}
			err = lerr
			return done
		}, func() {
			if lerr := b.loadGroupPartition(p); lerr != nil {
				b.logger.Error("group: loading a partition of "+group.OffsetsTopic, "partition", p, "err", lerr)
			}
		})
		return err
	}
}
