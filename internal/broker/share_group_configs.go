// Group configs (DescribeConfigs and IncrementalAlterConfigs on the GROUP resource, type
// 32) for share groups: share.auto.offset.reset, share.isolation.level,
// share.record.lock.duration.ms, share.session.timeout.ms and share.heartbeat.interval.ms,
// as `kafka-configs --entity-type groups` sets and describes them. A group's value
// overrides the broker's setting (share.auto.offset.reset and group.share.*) for that
// group. Configs can be set for any group name, existing or not, as in Kafka. A single
// node keeps them in share-group-configs.json in the data directory (written
// atomically); a cluster keeps them in its metadata (cluster_group_configs.go).
//
// The streams-group configs streams.session.timeout.ms, streams.heartbeat.interval.ms,
// streams.num.standby.replicas, streams.task.offset.interval.ms, streams.acceptable.recovery.lag,
// streams.num.warmup.replicas, streams.initial.rebalance.delay.ms, streams.assignment.interval.ms,
// streams.rack.aware.assignment.tags and streams.assignor.name are served too
// (streams_group_configs.go).
//
// Kafka 4.4's other group configs are served too (group_config_bounds.go,
// share/groupconfig_more.go): consumer.session.timeout.ms and consumer.heartbeat.interval.ms
// (honoured by the KIP-848 consumer groups), consumer.assignment.interval.ms,
// share.delivery.count.limit and share.partition.max.record.locks (honoured by the share
// partitions), share.renew.acknowledge.enable (false: RENEW is INVALID_RECORD_STATE),
// share.assignment.interval.ms, the *.assignor.offload.enable switches and
// errors.deadletterqueue.topic.name / .copy.record.enable, each validated against its type
// and the broker's group.*.min/max bounds as Kafka does.
//
// The dead-letter queue the errors.deadletterqueue.* configs name is written by
// share_dead_letters.go.
//
// A group runs with its configs clamped into the broker's current bounds (a value set
// before the bounds were tightened), as Kafka's GroupConfig.evaluate; DescribeConfigs
// shows them as set (group_config_bounds.go).
//
// Differences from Kafka: the assignment intervals and offload switches are stored and
// described but have no effect (Sluice assigns at the heartbeat that changes a group, on
// the coordinator's own goroutine).
package broker

import (
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// groupConfigsFileName holds the group configs in the data directory
// (resourceGroup, the GROUP config resource type, is in authorize_admin.go).
const groupConfigsFileName = "share-group-configs.json"

// groupConfigStore is share.ConfigStore over a file of the data directory.
type groupConfigStore struct{ b *Broker }

func (s groupConfigStore) path() string { return filepath.Join(s.b.dataDir, groupConfigsFileName) }

func (s groupConfigStore) Save(all map[string]map[string]string) error {
	data, err := share.EncodeGroupConfigs(all)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.b.fs, s.path(), data, 0o644)
}

// loadGroupConfigs reads the persisted group configs into the manager.
func (b *Broker) loadGroupConfigs() error {
	data, err := vfs.ReadFile(b.fs, groupConfigStore{b}.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return b.shares.LoadGroupConfigs(data)
}

// describeGroupConfigs returns every share- and streams-group config of group: its own
// value (GROUP_CONFIG) or the broker's (DEFAULT_CONFIG).
func (b *Broker) describeGroupConfigs(group string) ([]config.Value, error) {
	if group == "" {
		return nil, errorf(kerr.InvalidRequest, "Group name must not be empty.")
	}
	set := b.shares.GroupConfigs(group)
	def := b.shares.Config()
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	defaults := map[string]string{
		share.CfgAutoOffsetReset:    def.AutoOffsetReset,
		share.CfgIsolationLevel:     "read_uncommitted",
		share.CfgRecordLockDuration: ms(def.RecordLockDuration),
		share.CfgSessionTimeout:     ms(def.SessionTimeout),
		share.CfgHeartbeatInterval:  ms(def.HeartbeatInterval),
	}
	maps.Copy(defaults, b.streamsGroupDefaults()) // streams_group_configs.go
	maps.Copy(defaults, b.moreGroupDefaults())    // group_config_bounds.go
	out := make([]config.Value, 0, len(share.GroupConfigNames))
	for _, n := range share.GroupConfigNames {
		v := config.Value{Name: n, Value: defaults[n], Source: int8(kmsg.ConfigSourceDefaultConfig)}
		v.Def.Name, v.Def.Type = n, config.String
		if share.GroupConfigIsInt(n) {
			v.Def.Type = config.Int
		} else if share.GroupConfigIsLong(n) {
			v.Def.Type = config.Long
		} else if share.GroupConfigIsList(n) {
			v.Def.Type = config.List
		} else if share.GroupConfigIsBool(n) {
			v.Def.Type = config.Boolean
		}
		def := b.groupConfigDefaultSynonym(n, defaults[n]) // group_config_bounds.go
		v.Source = def.Source
		if s, ok := set[n]; ok {
			v.Value, v.Source = s, int8(kmsg.ConfigSourceGroupConfig)
			v.Synonyms = []config.Synonym{{Name: n, Value: s, Source: v.Source}}
		}
		v.Synonyms = append(v.Synonyms, def)
		out = append(out, v)
	}
	return out, nil
}

// alterGroupConfigs applies IncrementalAlterConfigs operations to group.
// Caller holds adminMu.
func (b *Broker) alterGroupConfigs(group string, ops []config.AlterOp, validateOnly bool) error {
	if group == "" {
		return errorf(kerr.InvalidRequest, "Group name must not be empty.")
	}
	next := maps.Clone(b.shares.GroupConfigs(group))
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		switch op.Op {
		case config.OpSet:
			if op.Value == nil {
				return errorf(kerr.InvalidConfig, "Null value not supported for: %s", op.Name)
			}
			if err := share.ValidateGroupConfig(op.Name, *op.Value); err != nil {
				return errorf(kerr.InvalidConfig, "%s", err.Error())
			}
			next[op.Name] = *op.Value
		case config.OpDelete:
			if !isKnownGroupConfig(op.Name) {
				return errorf(kerr.InvalidConfig, "Unknown group config name: %s", op.Name)
			}
			delete(next, op.Name)
		default:
			return errorf(kerr.InvalidConfig, "Config value append/subtract is not allowed for config key: %s", op.Name)
		}
	}
	if err := b.validateGroupConfigRanges(next); err != nil { // group_config_bounds.go
		return err
	}
	if err := b.validateStreamsGroupConfigs(next); err != nil { // streams_group_configs.go
		return err
	}
	if err := b.validateGroupSessionsExceedHeartbeats(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if b.cluster != nil {
		for n, v := range next {
			if err := share.ValidateGroupConfig(n, v); err != nil {
				return errorf(kerr.InvalidConfig, "%s", err.Error())
			}
		}
		return b.setGroupConfigsCluster(group, next)
	}
	if err := b.shares.SetGroupConfigs(group, next); err != nil {
		return errorf(kerr.InvalidConfig, "%s", err.Error())
	}
	return nil
}

func isKnownGroupConfig(name string) bool {
	for _, n := range share.GroupConfigNames {
		if n == name {
			return true
		}
	}
	return false
}
