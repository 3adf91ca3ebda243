package share

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Group configs (Kafka's GROUP config resource) that apply to share groups.
// A group's value overrides the broker's setting for that group only.
const (
	CfgAutoOffsetReset    = "share.auto.offset.reset"
	CfgIsolationLevel     = "share.isolation.level"
	CfgRecordLockDuration = "share.record.lock.duration.ms"
	CfgSessionTimeout     = "share.session.timeout.ms"
	CfgHeartbeatInterval  = "share.heartbeat.interval.ms"
)

// Group configs that apply to streams groups (KIP-1071). They are kept with
// the share-group configs (one store of group configs, as Kafka's), and the
// group coordinator reads them (internal/group/streams_configs.go); the broker
// checks their ranges against its group.streams.* settings.
const (
	CfgStreamsSessionTimeout    = "streams.session.timeout.ms"
	CfgStreamsHeartbeatInterval = "streams.heartbeat.interval.ms"
	CfgStreamsNumStandbys       = "streams.num.standby.replicas"
	// Accepted and described, as Kafka 4.4 does; its sticky task assignor
	// (like Sluice's) assigns no warm-up tasks.
	CfgStreamsNumWarmups         = "streams.num.warmup.replicas"
	CfgStreamsTaskOffsetInterval = "streams.task.offset.interval.ms"
	CfgStreamsAcceptableRecovery = "streams.acceptable.recovery.lag"
	// The first assignment of a group that had no member waits this long
	// for more members; assignments are at most one per interval; standby
	// replicas are spread over the members' client tags; the task assignor.
	CfgStreamsInitialRebalanceDelay = "streams.initial.rebalance.delay.ms"
	CfgStreamsAssignmentInterval    = "streams.assignment.interval.ms"
	CfgStreamsRackAwareTags         = "streams.rack.aware.assignment.tags"
	CfgStreamsAssignorName          = "streams.assignor.name"
)

// StreamsAssignors are the streams task assignors a group may name in
// streams.assignor.name (Kafka 4.4's default group.streams.assignors).
var StreamsAssignors = []string{"sticky"}

// GroupConfigNames lists the group configs served, sorted.
var GroupConfigNames = []string{CfgAutoOffsetReset, CfgHeartbeatInterval, CfgIsolationLevel, CfgRecordLockDuration,
	CfgSessionTimeout, CfgStreamsAcceptableRecovery, CfgStreamsAssignmentInterval, CfgStreamsAssignorName,
	CfgStreamsHeartbeatInterval, CfgStreamsInitialRebalanceDelay, CfgStreamsNumStandbys, CfgStreamsNumWarmups,
	CfgStreamsRackAwareTags, CfgStreamsSessionTimeout, CfgStreamsTaskOffsetInterval}

// GroupConfigIsList reports whether a group config is a LIST.
func GroupConfigIsList(name string) bool { return name == CfgStreamsRackAwareTags }

// SplitList splits a LIST config value as Kafka does (comma-separated,
// trimmed; an empty value is an empty list).
func SplitList(value string) []string {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	parts := strings.Split(value, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// GroupConfigIsInt reports whether a group config is an INT (else STRING;
// streams.acceptable.recovery.lag is a LONG, GroupConfigIsLong).
func GroupConfigIsInt(name string) bool {
	return strings.HasSuffix(name, ".ms") || name == CfgStreamsNumStandbys || name == CfgStreamsNumWarmups ||
		name == CfgDeliveryCountLimit || name == CfgPartitionMaxRecordLocks
}

// GroupConfigIsLong reports whether a group config is a LONG.
func GroupConfigIsLong(name string) bool { return name == CfgStreamsAcceptableRecovery }

// ValidateGroupConfig checks one group config value; the error is the
// message of Kafka's INVALID_CONFIG.
func ValidateGroupConfig(name, value string) error {
	if ok, err := validateMoreGroupConfig(name, value); ok { // groupconfig_more.go
		return err
	}
	switch name {
	case CfgAutoOffsetReset:
		return validateAutoOffsetReset(name, value) // auto_offset_reset.go
	case CfgIsolationLevel:
		if v := strings.ToLower(value); v != "read_uncommitted" && v != "read_committed" {
			return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", value, name)
		}
	case CfgRecordLockDuration:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil || n < 1000 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 1000", value, name)
		}
	case CfgSessionTimeout, CfgHeartbeatInterval, CfgStreamsSessionTimeout, CfgStreamsHeartbeatInterval,
		CfgStreamsTaskOffsetInterval:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil || n < 1 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 1", value, name)
		}
	case CfgStreamsNumStandbys, CfgStreamsNumWarmups, CfgStreamsInitialRebalanceDelay, CfgStreamsAssignmentInterval:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 0", value, name)
		}
	case CfgStreamsAcceptableRecovery:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 0", value, name)
		}
	case CfgStreamsRackAwareTags:
		seen := map[string]bool{}
		for _, t := range SplitList(value) {
			if t == "" {
				return fmt.Errorf("Configuration '%s' values must not be empty.", name)
			}
			if seen[t] {
				return fmt.Errorf("Configuration '%s' values must not be duplicated.", name)
			}
			seen[t] = true
		}
	case CfgStreamsAssignorName:
		if !slices.Contains(StreamsAssignors, value) {
			return fmt.Errorf("%s '%s' is not a registered task assignor. Registered assignors are: [%s].", name, value, strings.Join(StreamsAssignors, ", "))
		}
	default:
		return fmt.Errorf("Unknown group config name: %s", name)
	}
	return nil
}

// ConfigStore persists the group configs of every group.
type ConfigStore interface {
	Save(all map[string]map[string]string) error
}

// GroupConfigs returns the configs set on group (a copy).
func (m *Manager) GroupConfigs(group string) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.groupCfgs[group])
}

// SetGroupConfigs replaces the configs of group (nil or empty: none), after
// validating every value, and persists them. Share partitions of the group
// use the new lock duration from their next acquisition on.
func (m *Manager) SetGroupConfigs(group string, cfgs map[string]string) error {
	for _, n := range slices.Sorted(maps.Keys(cfgs)) {
		if err := ValidateGroupConfig(n, cfgs[n]); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next := maps.Clone(m.groupCfgs)
	if next == nil {
		next = map[string]map[string]string{}
	}
	if len(cfgs) == 0 {
		delete(next, group)
	} else {
		next[group] = maps.Clone(cfgs)
	}
	if m.cfgStore != nil {
		if err := m.cfgStore.Save(next); err != nil {
			return err
		}
	}
	m.groupCfgs = next
	eff := m.effectiveLocked(group)
	for k, p := range m.parts {
		if k.Group == group {
			p.mu.Lock()
			p.cfg = eff
			p.mu.Unlock()
		}
	}
	return nil
}

// LoadGroupConfigs installs persisted group configs (at start-up).
func (m *Manager) LoadGroupConfigs(data []byte) error {
	var all map[string]map[string]string
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupCfgs = all
	return nil
}

// EncodeGroupConfigs is the persisted form of all group configs.
func EncodeGroupConfigs(all map[string]map[string]string) ([]byte, error) {
	return json.MarshalIndent(all, "", "  ")
}

// effectiveLocked returns the configuration of group: the broker's, with
// the group's configs applied.
func (m *Manager) effectiveLocked(group string) *Config {
	c := m.cfg
	ms := func(v string) time.Duration {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	gc := m.groupCfgs[group]
	if c.EvaluateGroupConfig != nil && len(gc) > 0 {
		gc = c.EvaluateGroupConfig(gc)
	}
	for n, v := range gc {
		switch n {
		case CfgAutoOffsetReset:
			c.AutoOffsetReset = strings.ToLower(strings.TrimSpace(v))
		case CfgIsolationLevel:
			c.ReadCommitted = strings.EqualFold(v, "read_committed")
		case CfgRecordLockDuration:
			c.RecordLockDuration = ms(v)
		case CfgSessionTimeout:
			c.SessionTimeout = ms(v)
		case CfgHeartbeatInterval:
			c.HeartbeatInterval = ms(v)
		case CfgDeliveryCountLimit:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				c.DeliveryCountLimit = n
			}
		case CfgDeadLetterQueueTopicName:
			c.DeadLetterTopic = v
		case CfgDeadLetterQueueCopy:
			c.DeadLetterCopy, _ = ParseBool(v)
		case CfgRenewAcknowledgeEnable:
			on, ok := ParseBool(v)
			c.RenewDisabled = ok && !on
		case CfgPartitionMaxRecordLocks:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				c.MaxRecordLocks = n
			}
		}
	}
	return &c
}

// GroupConfig returns the effective configuration of group.
func (m *Manager) GroupConfig(group string) Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.effectiveLocked(group)
}

// ReplaceGroupConfigs installs every group's configs at once, without
// persisting them: on a cluster node they come from the metadata image.
// Share partitions take their group's new configuration at once.
func (m *Manager) ReplaceGroupConfigs(all map[string]map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupCfgs = all
	for k, p := range m.parts {
		eff := m.effectiveLocked(k.Group)
		p.mu.Lock()
		p.cfg = eff
		p.mu.Unlock()
	}
}

// AllGroupConfigs returns every group's configs (not to be modified).
func (m *Manager) AllGroupConfigs() map[string]map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groupCfgs
}
