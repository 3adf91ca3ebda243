package broker

import (
	"maps"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/share"
)

// The consumer-group and share-group configs of the GROUP config resource, checked
// against the broker's bounds as Apache Kafka 4.4's GroupConfig does (INVALID_CONFIG with
// its messages): consumer.session.timeout.ms, consumer.heartbeat.interval.ms and
// consumer.assignment.interval.ms within group.consumer.min/max.*; share.session.timeout.ms,
// share.heartbeat.interval.ms and share.assignment.interval.ms within group.share.min/max.*;
// share.record.lock.duration.ms, share.delivery.count.limit and
// share.partition.max.record.locks within group.share.min/max.record.lock.duration.ms,
// .delivery.count.limit and .partition.max.record.locks; and a group's session timeout
// (its own, else the broker's) greater than its heartbeat interval. The streams ones
// are in streams_group_configs.go.

// groupConfigRanges are the group configs with a broker range: name, lower-bound and
// upper-bound broker settings, in Kafka's order of checking.
var groupConfigRanges = [][3]string{
	{share.CfgConsumerHeartbeatInterval, "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{share.CfgConsumerSessionTimeout, "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{share.CfgConsumerAssignmentInterval, "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms"},
	{share.CfgHeartbeatInterval, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{share.CfgSessionTimeout, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{share.CfgRecordLockDuration, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{share.CfgDeliveryCountLimit, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{share.CfgPartitionMaxRecordLocks, "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	{share.CfgShareAssignmentInterval, "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"},
}

// groupConfigInt is an INT group config of next, if set and a number.
func groupConfigInt(next map[string]string, name string) (int64, bool) {
	v, ok := next[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	return n, err == nil
}

// validateGroupConfigRanges checks the ranged consumer and share group configs of a
// group's new set of configs.
func (b *Broker) validateGroupConfigRanges(next map[string]string) error {
	for _, r := range groupConfigRanges {
		n, ok := groupConfigInt(next, r[0])
		lo, hi := b.brokerInt(r[1]), b.brokerInt(r[2])
		if ok && (n < lo || n > hi) {
			return errorf(kerr.InvalidConfig, "%s must be in the range %d to %d inclusive.", r[0], lo, hi)
		}
	}
	return nil
}

// validateGroupSessionsExceedHeartbeats checks that a consumer or share group's
// session timeout stays greater than its heartbeat interval.
func (b *Broker) validateGroupSessionsExceedHeartbeats(next map[string]string) error {
	for _, p := range [][4]string{
		{share.CfgConsumerSessionTimeout, "group.consumer.session.timeout.ms", share.CfgConsumerHeartbeatInterval, "group.consumer.heartbeat.interval.ms"},
		{share.CfgSessionTimeout, "group.share.session.timeout.ms", share.CfgHeartbeatInterval, "group.share.heartbeat.interval.ms"},
	} {
		session, sOK := groupConfigInt(next, p[0])
		hb, hOK := groupConfigInt(next, p[2])
		if !sOK && !hOK {
			continue
		}
		if !sOK {
			session = b.brokerInt(p[1])
		}
		if !hOK {
			hb = b.brokerInt(p[3])
		}
		if session <= hb {
			return errorf(kerr.InvalidConfig, "%s must be greater than %s", p[0], p[2])
		}
	}
	return nil
}

// moreGroupDefaults are the broker settings the configs of
// share/groupconfig_more.go take when a group sets none.
func (b *Broker) moreGroupDefaults() map[string]string {
	s := func(name string) string { return strconv.FormatInt(b.brokerInt(name), 10) }
	def := b.shares.Config()
	return map[string]string{
		share.CfgConsumerSessionTimeout:     s("group.consumer.session.timeout.ms"),
		share.CfgConsumerHeartbeatInterval:  s("group.consumer.heartbeat.interval.ms"),
		share.CfgConsumerAssignmentInterval: s("group.consumer.assignment.interval.ms"),
		share.CfgConsumerAssignorOffload:    b.brokerBool("group.consumer.assignor.offload.enable"),
		share.CfgDeliveryCountLimit:         strconv.Itoa(def.DeliveryCountLimit),
		share.CfgPartitionMaxRecordLocks:    strconv.Itoa(def.MaxRecordLocks),
		share.CfgRenewAcknowledgeEnable:     "true",
		share.CfgShareAssignmentInterval:    s("group.share.assignment.interval.ms"),
		share.CfgShareAssignorOffload:       b.brokerBool("group.share.assignor.offload.enable"),
		share.CfgStreamsAssignorOffload:     b.brokerBool("group.streams.assignor.offload.enable"),
		share.CfgDeadLetterQueueTopicName:   "",
		share.CfgDeadLetterQueueCopy:        "false",
	}
}

// brokerBool is a BOOLEAN broker setting as "true" or "false".
func (b *Broker) brokerBool(name string) string {
	v, _ := share.ParseBool(b.brokerString(name))
	return strconv.FormatBool(v)
}

// groupConfigBrokerSynonym is the broker config a group config overrides, as Kafka 4.4's
// GroupConfig names it ("" for the group configs without one).
func groupConfigBrokerSynonym(name string) string {
	switch name {
	case share.CfgAutoOffsetReset, share.CfgIsolationLevel, share.CfgRenewAcknowledgeEnable,
		share.CfgDeadLetterQueueTopicName, share.CfgDeadLetterQueueCopy:
		return ""
	case share.CfgStreamsAssignorName:
		return "group.streams.assignors"
	}
	return "group." + name
}

// groupConfigDefaultSynonym is the synonym a group config falls back to, as Kafka's
// DescribeConfigs reports it: its broker config (STATIC_BROKER_CONFIG when set in the
// broker's configuration, else DEFAULT_CONFIG), or the group config's own default.
func (b *Broker) groupConfigDefaultSynonym(name, value string) config.Synonym {
	syn := config.Synonym{Name: name, Value: value, Source: int8(kmsg.ConfigSourceDefaultConfig)}
	if broker := groupConfigBrokerSynonym(name); broker != "" {
		syn.Name = broker
		if _, set := b.cfg.Raw[broker]; set {
			syn.Source = int8(kmsg.ConfigSourceStaticBrokerConfig)
		}
	}
	return syn
}

// evaluateGroupConfigs returns the configs a group runs with: its stored ones with each
// ranged value clamped into the broker's current bounds, as Kafka 4.4's
// GroupConfig.evaluate does (a value set before the broker's bounds were tightened).
func (b *Broker) evaluateGroupConfigs(stored map[string]string) map[string]string {
	var out map[string]string
	clamp := func(name string, lo, hi int64) {
		n, ok := groupConfigInt(stored, name)
		if !ok || n >= lo && n <= hi {
			return
		}
		if out == nil {
			out = maps.Clone(stored)
		}
		out[name] = strconv.FormatInt(min(max(n, lo), hi), 10)
	}
	const unbounded = 1<<31 - 1
	for _, r := range groupConfigRanges {
		clamp(r[0], b.brokerInt(r[1]), b.brokerInt(r[2]))
	}
	for _, r := range [][3]string{
		{share.CfgStreamsSessionTimeout, "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
		{share.CfgStreamsHeartbeatInterval, "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
		{share.CfgStreamsAssignmentInterval, "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"},
	} {
		clamp(r[0], b.brokerInt(r[1]), b.brokerInt(r[2]))
	}
	clamp(share.CfgStreamsNumStandbys, 0, b.brokerInt("group.streams.max.standby.replicas"))
	clamp(share.CfgStreamsTaskOffsetInterval, b.brokerInt("group.streams.min.task.offset.interval.ms"), unbounded)
	clamp(share.CfgStreamsNumWarmups, 0, b.brokerInt("group.streams.max.warmup.replicas"))
	if out == nil {
		return stored
	}
	return out
}
