package group

import (
	"strconv"
	"strings"
	"time"
)

// Per-group consumer configs (Kafka 4.4's GROUP config resource): consumer.session.timeout.ms
// and consumer.heartbeat.interval.ms override group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms for one consumer-protocol (KIP-848) group. The broker
// validates them when they are set (within group.consumer.min/max.*); the coordinator reads
// them at each ConsumerGroupHeartbeat, so a change applies from a member's next heartbeat:
// the interval it is told and the session timer armed for it.

const (
	cfgConsumerSessionTimeout    = "consumer.session.timeout.ms"
	cfgConsumerHeartbeatInterval = "consumer.heartbeat.interval.ms"
)

// consumerGroupMillis is group's positive millisecond config name, else def.
func (c *Coordinator) consumerGroupMillis(group, name string, def time.Duration) time.Duration {
	if c.cfg.GroupConfigs == nil {
		return def
	}
	v, ok := c.cfg.GroupConfigs(group)[name]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n <= 0 {
		return def // validated when set; never trust a hand-edited file
	}
	return time.Duration(n) * time.Millisecond
}

// consumerSessionTimeout is the session timeout of group's consumer-protocol members.
func (c *Coordinator) consumerSessionTimeout(group string) time.Duration {
	return c.consumerGroupMillis(group, cfgConsumerSessionTimeout, c.cfg.ConsumerSessionTimeout)
}

// consumerHeartbeatInterval is the heartbeat interval told to group's consumer-protocol members.
func (c *Coordinator) consumerHeartbeatInterval(group string) time.Duration {
	return c.consumerGroupMillis(group, cfgConsumerHeartbeatInterval, c.cfg.ConsumerHeartbeatInterval)
}
