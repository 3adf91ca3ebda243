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
