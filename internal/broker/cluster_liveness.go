package broker

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// The controller's fast path for a broker whose process is gone
// (internal/controller/liveness.go): the peer server reports the end of
// every connection a node sent raft messages or heartbeats on, and the
// controller probes the broker's peer address (GET /status, over the
// controller listener's security) to tell a dead process from a live one.

// livenessGrace is how long after a broker's connection ended a heartbeat
// may still come before its process is probed: the heartbeat interval, at
// most a second (the probe, not the grace, tells a live broker from a dead
// one).
func livenessGrace(heartbeat time.Duration) time.Duration {
	return min(heartbeat, time.Second)
}

// startLiveness wires the peer server's closed connections and the probe
// into the controller.
func (c *clusterNode) startLiveness() {
	c.srv.SetConnClosed(func(node uint64) { c.ctrl.ConnectionClosed(int32(node)) })
	c.ctrl.SetLivenessProbe(livenessGrace(c.cfg.heartbeatInterval), c.probeBroker)
}

// heartbeatFromPeer is the heartbeat method of the peer server: it names the
// connection's sender, so that its end is reported.
func (c *clusterNode) heartbeatFromPeer(ctx context.Context, req controller.HeartbeatRequest) (controller.HeartbeatResponse, error) {
	c.srv.TagConn(ctx, uint64(req.BrokerID))
	return c.ctrl.Heartbeat(ctx, req)
}

// probeBroker looks for broker b's registered process at its peer address.
func (c *clusterNode) probeBroker(ctx context.Context, b metadata.BrokerRegistration) (controller.ProbeResult, string) {
	if b.PeerAddress == "" {
		return controller.ProbeUnknown, "no peer address"
	}
	// A process that died has no connection left open to this node; one
	// that still has one is alive whatever its address answers (an address
	// that does not reach it from here, a firewall rejecting the probe).
	if n := c.srv.OpenConns(uint64(b.ID)); n > 0 {
		return controller.ProbeAlive, fmt.Sprintf("%d connection(s) of it still open here", n)
	}
	st, err := c.peers.PeerStatus(ctx, b.PeerAddress, uint64(c.cfg.nodeID))
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return controller.ProbeGone, "its peer address " + b.PeerAddress + " refuses connections"
	case err != nil:
		return controller.ProbeUnknown, err.Error()
	case st.Incarnation == "" || b.Incarnation == "":
		return controller.ProbeUnknown, "an answer without incarnation"
	case st.Incarnation != b.Incarnation:
		return controller.ProbeGone, "another process of node (incarnation " + st.Incarnation + ") answers at its peer address"
	}
	return controller.ProbeAlive, "incarnation " + st.Incarnation
}
