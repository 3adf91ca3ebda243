package broker

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/share"
)

// The streams-group configs of the GROUP config resource (KIP-1071), as
// Apache Kafka 4.x validates them: streams.session.timeout.ms within
// group.streams.min/max.session.timeout.ms, streams.heartbeat.interval.ms
// within group.streams.min/max.heartbeat.interval.ms, streams.num.standby.replicas
// at most group.streams.max.standby.replicas, streams.task.offset.interval.ms
// at least group.streams.min.task.offset.interval.ms, streams.num.warmup.replicas
// at most group.streams.max.warmup.replicas, streams.acceptable.recovery.lag at
// least 0, and the session timeout (the group's, else the broker's) greater
// than the heartbeat interval; streams.assignment.interval.ms within
// group.streams.min/max.assignment.interval.ms, streams.initial.rebalance.delay.ms
// at least 0, streams.rack.aware.assignment.tags without duplicates and
// streams.assignor.name naming a registered assignor ("sticky"); the coordinator
// honours them (internal/group/streams_assignment_configs.go). The task offset interval and the acceptable
// recovery lag are what the heartbeat tells the members; the warm-up count has
// no effect, as with Kafka 4.4's sticky task assignor, which assigns no
// warm-up tasks. They are
// stored with the share-group configs (share_group_configs.go) and read by
// the group coordinator at each streams heartbeat (internal/group/streams_configs.go).

// brokerInt is an integer broker setting: its configured value, else its
// default.
func (b *Broker) brokerInt(name string) int64 {
	v, ok := b.cfg.Raw[name]
	if !ok {
		if d, found := config.LookupBroker(name); found && d.Default != nil {
			v = *d.Default
		}
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}

// streamsGroupDefaults are the broker settings a streams group uses when it
// sets no group config (DescribeConfigs' DEFAULT_CONFIG values).
func (b *Broker) streamsGroupDefaults() map[string]string {
	s := func(name string) string { return strconv.FormatInt(b.brokerInt(name), 10) }
	return map[string]string{
		share.CfgStreamsSessionTimeout:     s("group.streams.session.timeout.ms"),
		share.CfgStreamsHeartbeatInterval:  s("group.streams.heartbeat.interval.ms"),
		share.CfgStreamsNumStandbys:        s("group.streams.num.standby.replicas"),
		share.CfgStreamsNumWarmups:         s("group.streams.num.warmup.replicas"),
		share.CfgStreamsTaskOffsetInterval: s("group.streams.task.offset.interval.ms"),
		share.CfgStreamsAcceptableRecovery: s("group.streams.acceptable.recovery.lag"),
		// streams_group_assignment_configs.go
		share.CfgStreamsInitialRebalanceDelay: s("group.streams.initial.rebalance.delay.ms"),
		share.CfgStreamsAssignmentInterval:    s("group.streams.assignment.interval.ms"),
		share.CfgStreamsRackAwareTags:         b.brokerString("group.streams.rack.aware.assignment.tags"),
		share.CfgStreamsAssignorName:          share.StreamsAssignors[0],
	}
}

// validateStreamsGroupConfigs checks the streams configs of a group's new
// set of configs against the broker's bounds (INVALID_CONFIG with Kafka's
// messages).
func (b *Broker) validateStreamsGroupConfigs(next map[string]string) error {
	val := func(name string) (int64, bool) {
		v, ok := next[name]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		return n, err == nil
	}
	inRange := func(name, minName, maxName string) error {
		n, ok := val(name)
		lo, hi := b.brokerInt(minName), b.brokerInt(maxName)
		if ok && (n < lo || n > hi) {
			return errorf(kerr.InvalidConfig, "%s must be in the range %d to %d inclusive.", name, lo, hi)
		}
		return nil
	}
	if err := inRange(share.CfgStreamsHeartbeatInterval, "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"); err != nil {
		return err
	}
	if err := inRange(share.CfgStreamsSessionTimeout, "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"); err != nil {
		return err
	}
	atMost := func(name, maxName string) error {
		if n, ok := val(name); ok {
			if hi := b.brokerInt(maxName); n > hi {
				return errorf(kerr.InvalidConfig, "%s must be less than or equal to %d", name, hi)
			}
		}
		return nil
	}
	if err := atMost(share.CfgStreamsNumStandbys, "group.streams.max.standby.replicas"); err != nil {
		return err
	}
	if n, ok := val(share.CfgStreamsTaskOffsetInterval); ok {
		if lo := b.brokerInt("group.streams.min.task.offset.interval.ms"); n < lo {
			return errorf(kerr.InvalidConfig, "%s must be greater than or equal to %d", share.CfgStreamsTaskOffsetInterval, lo)
		}
	}
	if err := atMost(share.CfgStreamsNumWarmups, "group.streams.max.warmup.replicas"); err != nil {
		return err
	}
	if err := inRange(share.CfgStreamsAssignmentInterval, "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"); err != nil {
		return err
	}
	session, sOK := val(share.CfgStreamsSessionTimeout)
	hb, hOK := val(share.CfgStreamsHeartbeatInterval)
	if sOK || hOK {
		if !sOK {
			session = b.brokerInt("group.streams.session.timeout.ms")
		}
		if !hOK {
			hb = b.brokerInt("group.streams.heartbeat.interval.ms")
		}
		if session <= hb {
			return errorf(kerr.InvalidConfig, "%s must be greater than %s", share.CfgStreamsSessionTimeout, share.CfgStreamsHeartbeatInterval)
		}
	}
	return nil
}

// groupConfigsOf returns the group configs set on group (nil before the
// share groups start): the group coordinator's view of them.
func (b *Broker) groupConfigsOf(group string) map[string]string {
	if b.shares == nil {
		return nil
	}
	return b.evaluateGroupConfigs(b.shares.GroupConfigs(group)) // group_config_bounds.go
}

// brokerString is a string (or list) broker setting: its configured value,
// else its default.
func (b *Broker) brokerString(name string) string {
	if v, ok := b.cfg.Raw[name]; ok {
		return v
	}
	if d, found := config.LookupBroker(name); found && d.Default != nil {
		return *d.Default
	}
	return ""
}
