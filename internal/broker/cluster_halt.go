package broker

import (
	"context"
	"fmt"
	"os"
)

// watchQuorum halts the process when this node's metadata quorum member
// stops by itself: its raft log or snapshot could not be written (a full
// or failed disk) or a committed entry could not be applied. Such a node
// can neither vote nor follow the metadata, yet it would go on serving
// clients from its last image; Apache Kafka halts on a fatal metadata log
// error so that the process is restarted and recovers from its log.
// Sluice does the same (finding 10 of docs/reliability.md): the error is
// logged and the process exits with status 1 (Options.Halt in tests).
func (c *clusterNode) watchQuorum(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-c.node.Done():
	}
	if ctx.Err() != nil {
		return // stopping
	}
	err := c.node.Stop() // the error that ended its loop
	if err == nil || ctx.Err() != nil {
		return
	}
	if c.closing.Load() {
		// The node is being stopped: there is nothing left to halt.
		c.logger.Error("the metadata quorum member stopped while the node was stopping", "err", err)
		return
	}
	c.halt(fmt.Errorf("the metadata quorum member of node %d stopped: %w", c.cfg.nodeID, err))
}

// halt ends the process after a fatal error (Options.Halt when set).
func (c *clusterNode) halt(err error) {
	c.logger.Error("halting: fatal error on the metadata log; exiting so that the process is restarted and recovers from its log", "err", err)
	if h := c.cfg.halt; h != nil {
		h(err)
		return
	}
	os.Exit(1)
}

// quorumStopped reports whether this node's quorum member has stopped.
func (c *clusterNode) quorumStopped() bool {
	select {
	case <-c.node.Done():
		return true
	default:
		return false
	}
}

// logFailed is the log manager's OnFail: a partition log failed on an I/O
// error (a full disk under its index, a failed fsync) and takes no more
// appends until a restart. Apache Kafka takes the log directory offline
// and, when it was the broker's only one (as in Sluice), halts. On a
// cluster node Sluice halts too: a replica that can no longer follow
// its leader would otherwise stay behind the high watermark until
// someone restarts it; restarted, it recovers its log and catches up.
// A single node keeps serving reads and answers KAFKA_STORAGE_ERROR to
// appends of that partition (docs/operations.md, Disk full).
func (b *Broker) logFailed(dir string, err error) {
	cc := b.clusterCfg
	if cc == nil || cc.implicit {
		return // a lone node keeps the single node's behaviour (cluster_implicit.go)
	}
	b.logger.Error("halting: a partition log failed; exiting so that the process is restarted and recovers its logs", "dir", dir, "err", err)
	if cc.halt != nil {
		cc.halt(fmt.Errorf("partition log %s failed: %w", dir, err))
		return
	}
	os.Exit(1)
}
