package broker

import (
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/config"
)

// Eligible leader replicas (KIP-966): the controller keeps them
// (internal/controller/elr.go) when eligible.leader.replicas.version 1 is
// finalized; DescribeTopicPartitions reports them with the last known ELR.

// minISRDefault is min.insync.replicas of server.properties (1 unset or
// invalid), the controller's default for topics without the config.
func minISRDefault(cfg *config.Broker) int {
	n, err := strconv.Atoi(strings.TrimSpace(cfg.Raw["min.insync.replicas"]))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// partitionELR returns a partition's eligible leader replicas and last
// known ELR as of the metadata this node follows (empty lists, never nil:
// the Java admin client dereferences them).
func (b *Broker) partitionELR(topic string, partition int32) (elr, lastKnown []int32) {
	elr, lastKnown = []int32{}, []int32{}
	if im := b.image(); im != nil {
		if ip, ok := im.Partition(topic, partition); ok {
			elr = append(elr, ip.ELR...)
			lastKnown = append(lastKnown, ip.LastKnownELR...)
		}
	}
	return elr, lastKnown
}

// previousBrokerEpoch is what this node's registration tells the
// controller about its last shutdown (KIP-966): the epoch it registered
// with before in this process (a registration again after its session
// lapsed: nothing was lost), else the epoch its last clean shutdown
// recorded in the clean-shutdown marker, -1 after an unclean one. The
// controller removes a broker whose previous epoch is not its registered
// one from the eligible leader replicas (internal/controller/elr_unclean.go).
func (c *clusterNode) previousBrokerEpoch() *int64 {
	e := c.b.logs.BrokerEpoch()
	if e < 0 {
		e = c.b.logs.PreviousBrokerEpoch()
	}
	return &e
}
