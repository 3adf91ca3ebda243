package group

import (
	"math"
	"time"
)

// Config holds the broker settings the coordinator honours. Zero values are replaced by
// Kafka's defaults in New.
type Config struct {
	// NumPartitions is offsets.topic.num.partitions (50).
	NumPartitions int32
	// OffsetsRetention is offsets.retention.minutes (10080 minutes).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms (600000).
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3000). Use a negative
	// value for "no delay" (zero means "default").
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout / MaxSessionTimeout are group.min.session.timeout.ms (6000) and
	// group.max.session.timeout.ms (1800000).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxGroupSize is group.max.size (Integer.MAX_VALUE) for classic groups and
	// group.consumer.max.size for consumer groups.
	MaxGroupSize int
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms (45000).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms (5000).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerAssignors is group.consumer.assignors; the first is the default
	// (uniform, range).
	ConsumerAssignors []string
	// StreamsSessionTimeout is group.streams.session.timeout.ms (45000).
	StreamsSessionTimeout time.Duration
	// StreamsHeartbeatInterval is group.streams.heartbeat.interval.ms (5000).
	StreamsHeartbeatInterval time.Duration
	// StreamsNumStandbyReplicas is group.streams.num.standby.replicas (0).
	StreamsNumStandbyReplicas int
	// StreamsTaskOffsetInterval is group.streams.task.offset.interval.ms (60000).
	StreamsTaskOffsetInterval time.Duration
	// StreamsAcceptableRecoveryLag is group.streams.acceptable.recovery.lag
	// (10000; negative: 0).
	StreamsAcceptableRecoveryLag int64
	// StreamsInitialRebalanceDelay is group.streams.initial.rebalance.delay.ms
	// (the broker passes Kafka's 3000; zero: no delay), StreamsAssignmentInterval
	// group.streams.assignment.interval.ms (1000; zero: none) and
	// StreamsRackAwareTags group.streams.rack.aware.assignment.tags
	// (streams_assignment_configs.go).
	StreamsInitialRebalanceDelay time.Duration
	StreamsAssignmentInterval    time.Duration
	StreamsRackAwareTags         []string
	// GroupConfigs returns the group configs set on a group (Kafka's GROUP
	// config resource; nil: none). The streams ones override the three
	// settings above for that group (streams_configs.go).
	GroupConfigs func(group string) map[string]string
}

func (c Config) withDefaults() Config {
	if c.NumPartitions <= 0 {
		c.NumPartitions = 50
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = 10080 * time.Minute
	}
	if c.OffsetsRetentionCheckInterval <= 0 {
		c.OffsetsRetentionCheckInterval = 600000 * time.Millisecond
	}
	if c.OffsetMetadataMaxBytes <= 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	switch {
	case c.InitialRebalanceDelay == 0:
		c.InitialRebalanceDelay = 3000 * time.Millisecond
	case c.InitialRebalanceDelay < 0:
		c.InitialRebalanceDelay = 0
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 6000 * time.Millisecond
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 1800000 * time.Millisecond
	}
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = math.MaxInt32
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = 45000 * time.Millisecond
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = 5000 * time.Millisecond
	}
	if c.StreamsSessionTimeout <= 0 {
		c.StreamsSessionTimeout = 45000 * time.Millisecond
	}
	if c.StreamsHeartbeatInterval <= 0 {
		c.StreamsHeartbeatInterval = 5000 * time.Millisecond
	}
	if c.StreamsTaskOffsetInterval <= 0 {
		c.StreamsTaskOffsetInterval = 60000 * time.Millisecond
	}
	switch {
	case c.StreamsAcceptableRecoveryLag == 0:
		c.StreamsAcceptableRecoveryLag = 10000
	case c.StreamsAcceptableRecoveryLag < 0:
		c.StreamsAcceptableRecoveryLag = 0
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = []string{assignorUniform, assignorRange}
	}
	return c
}
