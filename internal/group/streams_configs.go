package group

import (
	"strconv"
	"strings"
	"time"
)

// Per-group streams configs (Kafka's GROUP config resource, set with
// IncrementalAlterConfigs): streams.session.timeout.ms,
// streams.heartbeat.interval.ms, streams.num.standby.replicas,
// streams.task.offset.interval.ms and streams.acceptable.recovery.lag override
// the broker's group.streams.* settings for one group (streams.num.warmup.replicas
// is stored but, as with Kafka 4.4's sticky assignor, no warm-up tasks are
// assigned). The broker validates them when they are set; the coordinator
// reads them at each heartbeat, so a change applies from the member's next
// heartbeat (the intervals and lag it is told, the session timer it arms). A change of the standby count changes the group's
// assignment configuration: as Kafka, the group epoch is bumped and the
// tasks are assigned again.

const (
	cfgStreamsSessionTimeout     = "streams.session.timeout.ms"
	cfgStreamsHeartbeatInterval  = "streams.heartbeat.interval.ms"
	cfgStreamsNumStandbys        = "streams.num.standby.replicas"
	cfgStreamsTaskOffsetInterval = "streams.task.offset.interval.ms"
	cfgStreamsAcceptableRecovery = "streams.acceptable.recovery.lag"
	// streams_assignment_configs.go
	cfgStreamsInitialRebalanceDelay = "streams.initial.rebalance.delay.ms"
	cfgStreamsAssignmentInterval    = "streams.assignment.interval.ms"
	cfgStreamsRackAwareTags         = "streams.rack.aware.assignment.tags"
)

// streamsGroupConfig is the configuration a streams group runs with.
type streamsGroupConfig struct {
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	standbys          int
	// told to the members: how often to report task offsets, and the lag
	// within which a member counts as caught up
	taskOffsetInterval time.Duration
	acceptableLag      int64
	// streams_assignment_configs.go
	initialDelay       time.Duration
	assignmentInterval time.Duration
	rackTags           []string
}

// streamsConfig returns group's configuration: the broker's settings with
// the group's own configs applied.
func (c *Coordinator) streamsConfig(group string) streamsGroupConfig {
	out := streamsGroupConfig{
		sessionTimeout:     c.cfg.StreamsSessionTimeout,
		heartbeatInterval:  c.cfg.StreamsHeartbeatInterval,
		standbys:           c.cfg.StreamsNumStandbyReplicas,
		taskOffsetInterval: c.cfg.StreamsTaskOffsetInterval,
		acceptableLag:      c.cfg.StreamsAcceptableRecoveryLag,
		initialDelay:       c.cfg.StreamsInitialRebalanceDelay,
		assignmentInterval: c.cfg.StreamsAssignmentInterval,
		rackTags:           c.cfg.StreamsRackAwareTags,
	}
	if c.cfg.GroupConfigs == nil {
		return out
	}
	for name, v := range c.cfg.GroupConfigs(group) {
		if name == cfgStreamsRackAwareTags {
			out.rackTags = splitTags(v)
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
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
			out.standbys = int(min(n, 1<<20))
		case cfgStreamsTaskOffsetInterval:
			if n > 0 {
				out.taskOffsetInterval = time.Duration(n) * time.Millisecond
			}
		case cfgStreamsAcceptableRecovery:
			out.acceptableLag = n
		case cfgStreamsInitialRebalanceDelay:
			out.initialDelay = time.Duration(n) * time.Millisecond
		case cfgStreamsAssignmentInterval:
			out.assignmentInterval = time.Duration(n) * time.Millisecond
		}
	}
	return out
}
