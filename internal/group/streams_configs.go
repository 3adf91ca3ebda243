package group

import (
	"strconv"
	"strings"
	"time"
)

// Per-group streams configs (Kafka's GROUP config resource, set with
// IncrementalAlterConfigs): streams.session.timeout.ms,
// streams.heartbeat.interval.ms and streams.num.standby.replicas override the
// broker's group.streams.* settings for one group. The broker validates them
// when they are set; the coordinator reads them at each heartbeat, so a change
// applies from the member's next heartbeat (the interval it is given, the
// session timer it arms). A change of the standby count changes the group's
// assignment configuration: as Kafka, the group epoch is bumped and the
// tasks are assigned again.

const (
	cfgStreamsSessionTimeout    = "streams.session.timeout.ms"
	cfgStreamsHeartbeatInterval = "streams.heartbeat.interval.ms"
	cfgStreamsNumStandbys       = "streams.num.standby.replicas"
)

// streamsGroupConfig is the configuration a streams group runs with.
type streamsGroupConfig struct {
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	standbys          int
}

// streamsConfig returns group's configuration: the broker's settings with
// the group's own configs applied.
func (c *Coordinator) streamsConfig(group string) streamsGroupConfig {
	out := streamsGroupConfig{
		sessionTimeout:    c.cfg.StreamsSessionTimeout,
		heartbeatInterval: c.cfg.StreamsHeartbeatInterval,
		standbys:          c.cfg.StreamsNumStandbyReplicas,
	}
	if c.cfg.GroupConfigs == nil {
		return out
	}
	for name, v := range c.cfg.GroupConfigs(group) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			continue // validated when set; never trust a hand-edited file
		}
		switch name {
		case cfgStreamsSessionTimeout:
			if n > 0 {
				out.sessionTimeout = time.Duration(n) * time.Millisecond
			}
		case cfgStreamsHeartbeatInterval:
			if n > 0 {
				out.heartbeatInterval = time.Duration(n) * time.Millisecond
			}
		case cfgStreamsNumStandbys:
			out.standbys = int(n)
		}
	}
	return out
}
