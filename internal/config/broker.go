package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Broker is the typed broker configuration. Every field has Kafka's default
// unless a property sets it; Raw keeps exactly the properties that were set
// (after validation), keyed by Kafka name.
type Broker struct {
	NodeID                   int32    // node.id (broker.id is a synonym)
	NumPartitions            int32    // num.partitions
	DefaultReplicationFactor int16    // default.replication.factor
	AutoCreateTopics         bool     // auto.create.topics.enable
	DeleteTopicEnable        bool     // delete.topic.enable
	LogDirs                  []string // log.dirs, else log.dir
	Listeners                string   // listeners
	AdvertisedListeners      string   // advertised.listeners

	SocketRequestMaxBytes int32 // socket.request.max.bytes
	ConnectionsMaxIdleMs  int64 // connections.max.idle.ms
	SocketSendBufferBytes int32 // socket.send.buffer.bytes
	MessageMaxBytes       int32 // message.max.bytes

	OffsetsTopicNumPartitions       int32 // offsets.topic.num.partitions
	OffsetsTopicReplicationFactor   int16 // offsets.topic.replication.factor
	TxnStateReplicationFactor       int16 // transaction.state.log.replication.factor
	OffsetsTopicSegmentBytes        int32 // offsets.topic.segment.bytes
	OffsetsRetentionMinutes         int   // offsets.retention.minutes
	OffsetsRetentionCheckIntervalMs int64 // offsets.retention.check.interval.ms
	OffsetMetadataMaxBytes          int   // offset.metadata.max.bytes

	GroupInitialRebalanceDelayMs       int      // group.initial.rebalance.delay.ms
	GroupMinSessionTimeoutMs           int      // group.min.session.timeout.ms
	GroupMaxSessionTimeoutMs           int      // group.max.session.timeout.ms
	GroupMaxSize                       int      // group.max.size
	GroupCoordinatorRebalanceProtocols []string // group.coordinator.rebalance.protocols

	GroupConsumerSessionTimeoutMs       int      // group.consumer.session.timeout.ms
	GroupConsumerMinSessionTimeoutMs    int      // group.consumer.min.session.timeout.ms
	GroupConsumerMaxSessionTimeoutMs    int      // group.consumer.max.session.timeout.ms
	GroupConsumerHeartbeatIntervalMs    int      // group.consumer.heartbeat.interval.ms
	GroupConsumerMinHeartbeatIntervalMs int      // group.consumer.min.heartbeat.interval.ms
	GroupConsumerMaxHeartbeatIntervalMs int      // group.consumer.max.heartbeat.interval.ms
	GroupConsumerMaxSize                int      // group.consumer.max.size
	GroupConsumerAssignors              []string // group.consumer.assignors
	GroupConsumerMigrationPolicy        string   // group.consumer.migration.policy (lower case)

	GroupShareRecordLockDurationMs    int    // group.share.record.lock.duration.ms
	GroupShareDeliveryCountLimit      int    // group.share.delivery.count.limit
	GroupSharePartitionMaxRecordLocks int    // group.share.partition.max.record.locks
	GroupShareHeartbeatIntervalMs     int    // group.share.heartbeat.interval.ms
	GroupShareSessionTimeoutMs        int    // group.share.session.timeout.ms
	GroupShareMaxSize                 int    // group.share.max.size
	ShareAutoOffsetReset              string // share.auto.offset.reset (lower case)
	ShareStateTopicNumPartitions      int32  // share.coordinator.state.topic.num.partitions
	ShareStateTopicSegmentBytes       int32  // share.coordinator.state.topic.segment.bytes

	TransactionalIDExpirationMs               int   // transactional.id.expiration.ms
	ProducerIDExpirationMs                    int   // producer.id.expiration.ms
	ProducerIDExpirationCheckIntervalMs       int   // producer.id.expiration.check.interval.ms
	TransactionMaxTimeoutMs                   int   // transaction.max.timeout.ms
	TransactionStateLogNumPartitions          int32 // transaction.state.log.num.partitions
	TransactionStateLogSegmentBytes           int32 // transaction.state.log.segment.bytes
	TransactionAbortTimedOutCleanupIntervalMs int   // transaction.abort.timed.out.transaction.cleanup.interval.ms
	TransactionRemoveExpiredCleanupIntervalMs int   // transaction.remove.expired.transaction.cleanup.interval.ms

	LogCleanerEnable              bool    // log.cleaner.enable
	LogCleanerThreads             int     // log.cleaner.threads
	LogCleanerDedupeBufferSize    int64   // log.cleaner.dedupe.buffer.size
	LogCleanerBackoffMs           int64   // log.cleaner.backoff.ms
	LogCleanerIOBufferSize        int     // log.cleaner.io.buffer.size
	LogCleanerIOBufferLoadFactor  float64 // log.cleaner.io.buffer.load.factor
	LogCleanerIOMaxBytesPerSecond float64 // log.cleaner.io.max.bytes.per.second

	LogRetentionCheckIntervalMs int64 // log.retention.check.interval.ms
	LogFlushSchedulerIntervalMs int64 // log.flush.scheduler.interval.ms

	AuthorizerClassName  string   // authorizer.class.name ("" = no authorizer)
	SuperUsers           []string // super.users (split on ';', trimmed, empties dropped)
	AllowEveryoneIfNoACL bool     // allow.everyone.if.no.acl.found

	// Raw holds the explicitly set properties (Kafka names, validated values).
	Raw map[string]string
	// DynamicBroker and DynamicDefault hold the dynamic configs of this
	// broker and the cluster-wide dynamic defaults (dynamic.go); both take
	// precedence over Raw, this broker's first.
	DynamicBroker, DynamicDefault map[string]string
}

// DefaultBroker returns the configuration with every Kafka default applied.
func DefaultBroker() *Broker {
	b, err := NewBroker(nil)
	if err != nil {
		panic("config: defaults do not validate: " + err.Error())
	}
	return b
}

// NewBroker validates props (Kafka broker property names, e.g. from
// LoadBrokerFile) and builds the typed configuration. An unknown name or an
// invalid value is a *ConfigError naming it. Values are stored trimmed.
func NewBroker(props map[string]string) (*Broker, error) {
	b := &Broker{Raw: make(map[string]string, len(props))}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	// Every unknown name and invalid value is reported, not only the first,
	// so that a file is fixed in one go.
	var errs []error
	for _, n := range names {
		v := strings.TrimSpace(props[n])
		i, ok := brokerIndex[n]
		if !ok {
			known, err := checkPrefixed(n, v)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !known {
				errs = append(errs, &ConfigError{Name: n, Msg: "unknown broker config name" + didYouMean(SuggestBroker(n))})
				continue
			}
			b.Raw[n] = v
			continue
		}
		if err := brokerDefs[i].Check(v); err != nil {
			errs = append(errs, err)
			continue
		}
		b.Raw[n] = v
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	if len(errs) > 1 {
		return nil, errors.Join(errs...)
	}
	if err := b.fill(); err != nil {
		return nil, err
	}
	return b, nil
}

// value returns the effective raw value of a broker config: the explicitly
// set one, else the default. ok is false when neither exists (Kafka null).
func (b *Broker) value(name string) (v string, ok bool) {
	if v, ok := b.dynamicValue(name); ok {
		return v, true
	}
	if v, ok := b.Raw[name]; ok {
		return v, true
	}
	i, known := brokerIndex[name]
	if !known {
		panic("config: internal lookup of unknown broker config " + name)
	}
	if d := brokerDefs[i].Default; d != nil {
		return *d, true
	}
	return "", false
}

// Int64 is a numeric broker config's effective value (Value: as set, else
// the default; validated already), 0 when it has neither.
func (b *Broker) Int64(name string) int64 {
	v, _ := b.Value(name)
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}

// typed reads validated broker values; the first failure is kept in err.
type typed struct {
	b   *Broker
	err error
}

func (t *typed) int(name string) int64 {
	v, ok := t.b.value(name)
	if !ok {
		return 0
	}
	i := brokerIndex[name]
	n, err := parseInt(brokerDefs[i].Type, v)
	if err != nil && t.err == nil {
		t.err = &ConfigError{Name: name, Value: v, Msg: err.Error()}
	}
	return n
}

func (t *typed) bool(name string) bool {
	v, _ := t.b.value(name)
	x, err := parseBool(v)
	if err != nil && t.err == nil {
		t.err = &ConfigError{Name: name, Value: v, Msg: err.Error()}
	}
	return x
}

func (t *typed) double(name string) float64 {
	v, _ := t.b.value(name)
	f, err := parseDouble(v)
	if err != nil && t.err == nil {
		t.err = &ConfigError{Name: name, Value: v, Msg: err.Error()}
	}
	return f
}

func (t *typed) str(name string) string {
	v, _ := t.b.value(name)
	return strings.TrimSpace(v)
}

func (t *typed) list(name string) []string {
	v, _ := t.b.value(name)
	return parseList(v)
}

// fill computes the typed fields from Raw and the defaults, and checks the
// rules that span several configs.
func (b *Broker) fill() error {
	t := &typed{b: b}
	b.NodeID = int32(t.int("node.id"))
	if _, set := b.Raw["node.id"]; !set {
		if _, bset := b.Raw["broker.id"]; bset && t.int("broker.id") >= 0 {
			b.NodeID = int32(t.int("broker.id"))
		}
	} else if _, bset := b.Raw["broker.id"]; bset {
		if id := t.int("broker.id"); id >= 0 && int32(id) != b.NodeID {
			return &ConfigError{Name: "broker.id", Value: b.Raw["broker.id"],
				Msg: fmt.Sprintf("must match node.id (%d) when both are set", b.NodeID)}
		}
	}
	b.NumPartitions = int32(t.int("num.partitions"))
	b.DefaultReplicationFactor = int16(t.int("default.replication.factor"))
	b.AutoCreateTopics = t.bool("auto.create.topics.enable")
	b.DeleteTopicEnable = t.bool("delete.topic.enable")
	if dirs, ok := b.Raw["log.dirs"]; ok {
		b.LogDirs = parseList(dirs)
	} else {
		b.LogDirs = parseList(t.str("log.dir"))
	}
	b.Listeners = t.str("listeners")
	b.AdvertisedListeners = t.str("advertised.listeners")

	b.SocketRequestMaxBytes = int32(t.int("socket.request.max.bytes"))
	b.ConnectionsMaxIdleMs = t.int("connections.max.idle.ms")
	b.SocketSendBufferBytes = int32(t.int("socket.send.buffer.bytes"))
	b.MessageMaxBytes = int32(t.int("message.max.bytes"))

	b.OffsetsTopicNumPartitions = int32(t.int("offsets.topic.num.partitions"))
	b.OffsetsTopicReplicationFactor = int16(t.int("offsets.topic.replication.factor"))
	b.TxnStateReplicationFactor = int16(t.int("transaction.state.log.replication.factor"))
	b.OffsetsTopicSegmentBytes = int32(t.int("offsets.topic.segment.bytes"))
	b.OffsetsRetentionMinutes = int(t.int("offsets.retention.minutes"))
	b.OffsetsRetentionCheckIntervalMs = t.int("offsets.retention.check.interval.ms")
	b.OffsetMetadataMaxBytes = int(t.int("offset.metadata.max.bytes"))

	b.GroupInitialRebalanceDelayMs = int(t.int("group.initial.rebalance.delay.ms"))
	b.GroupMinSessionTimeoutMs = int(t.int("group.min.session.timeout.ms"))
	b.GroupMaxSessionTimeoutMs = int(t.int("group.max.session.timeout.ms"))
	b.GroupMaxSize = int(t.int("group.max.size"))
	b.GroupCoordinatorRebalanceProtocols = t.list("group.coordinator.rebalance.protocols")

	b.GroupConsumerSessionTimeoutMs = int(t.int("group.consumer.session.timeout.ms"))
	b.GroupConsumerMinSessionTimeoutMs = int(t.int("group.consumer.min.session.timeout.ms"))
	b.GroupConsumerMaxSessionTimeoutMs = int(t.int("group.consumer.max.session.timeout.ms"))
	b.GroupConsumerHeartbeatIntervalMs = int(t.int("group.consumer.heartbeat.interval.ms"))
	b.GroupConsumerMinHeartbeatIntervalMs = int(t.int("group.consumer.min.heartbeat.interval.ms"))
	b.GroupConsumerMaxHeartbeatIntervalMs = int(t.int("group.consumer.max.heartbeat.interval.ms"))
	b.GroupConsumerMaxSize = int(t.int("group.consumer.max.size"))
	b.GroupConsumerAssignors = t.list("group.consumer.assignors")
	b.GroupConsumerMigrationPolicy = strings.ToLower(t.str("group.consumer.migration.policy"))

	b.GroupShareRecordLockDurationMs = int(t.int("group.share.record.lock.duration.ms"))
	b.GroupShareDeliveryCountLimit = int(t.int("group.share.delivery.count.limit"))
	b.GroupSharePartitionMaxRecordLocks = int(t.int("group.share.partition.max.record.locks"))
	b.GroupShareHeartbeatIntervalMs = int(t.int("group.share.heartbeat.interval.ms"))
	b.GroupShareSessionTimeoutMs = int(t.int("group.share.session.timeout.ms"))
	b.GroupShareMaxSize = int(t.int("group.share.max.size"))
	b.ShareAutoOffsetReset = strings.ToLower(t.str("share.auto.offset.reset"))
	b.ShareStateTopicNumPartitions = int32(t.int("share.coordinator.state.topic.num.partitions"))
	b.ShareStateTopicSegmentBytes = int32(t.int("share.coordinator.state.topic.segment.bytes"))

	b.TransactionalIDExpirationMs = int(t.int("transactional.id.expiration.ms"))
	b.TransactionMaxTimeoutMs = int(t.int("transaction.max.timeout.ms"))
	b.ProducerIDExpirationMs = int(t.int("producer.id.expiration.ms"))
	b.ProducerIDExpirationCheckIntervalMs = int(t.int("producer.id.expiration.check.interval.ms"))
	b.TransactionStateLogNumPartitions = int32(t.int("transaction.state.log.num.partitions"))
	b.TransactionStateLogSegmentBytes = int32(t.int("transaction.state.log.segment.bytes"))
	b.TransactionAbortTimedOutCleanupIntervalMs = int(t.int("transaction.abort.timed.out.transaction.cleanup.interval.ms"))
	b.TransactionRemoveExpiredCleanupIntervalMs = int(t.int("transaction.remove.expired.transaction.cleanup.interval.ms"))

	b.LogCleanerEnable = t.bool("log.cleaner.enable")
	b.LogCleanerThreads = int(t.int("log.cleaner.threads"))
	b.LogCleanerDedupeBufferSize = t.int("log.cleaner.dedupe.buffer.size")
	b.LogCleanerBackoffMs = t.int("log.cleaner.backoff.ms")
	b.LogCleanerIOBufferSize = int(t.int("log.cleaner.io.buffer.size"))
	b.LogCleanerIOBufferLoadFactor = t.double("log.cleaner.io.buffer.load.factor")
	b.LogCleanerIOMaxBytesPerSecond = t.double("log.cleaner.io.max.bytes.per.second")

	b.LogRetentionCheckIntervalMs = t.int("log.retention.check.interval.ms")
	b.LogFlushSchedulerIntervalMs = t.int("log.flush.scheduler.interval.ms")

	b.AuthorizerClassName = t.str("authorizer.class.name")
	b.SuperUsers = nil
	for _, p := range strings.Split(t.str("super.users"), ";") {
		if p = strings.TrimSpace(p); p != "" {
			b.SuperUsers = append(b.SuperUsers, p)
		}
	}
	b.AllowEveryoneIfNoACL = t.bool("allow.everyone.if.no.acl.found")
	if t.err != nil {
		return t.err
	}
	return b.checkRelations()
}

// checkRelations enforces Kafka's cross-config rules.
func (b *Broker) checkRelations() error {
	type rel struct {
		ok        bool
		name, msg string
	}
	rels := []rel{
		{b.GroupMinSessionTimeoutMs <= b.GroupMaxSessionTimeoutMs, "group.min.session.timeout.ms",
			"must not exceed group.max.session.timeout.ms"},
		{b.GroupConsumerMinSessionTimeoutMs <= b.GroupConsumerMaxSessionTimeoutMs, "group.consumer.min.session.timeout.ms",
			"must not exceed group.consumer.max.session.timeout.ms"},
		{b.GroupConsumerSessionTimeoutMs >= b.GroupConsumerMinSessionTimeoutMs &&
			b.GroupConsumerSessionTimeoutMs <= b.GroupConsumerMaxSessionTimeoutMs, "group.consumer.session.timeout.ms",
			"must be between group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms"},
		{b.GroupConsumerMinHeartbeatIntervalMs <= b.GroupConsumerMaxHeartbeatIntervalMs, "group.consumer.min.heartbeat.interval.ms",
			"must not exceed group.consumer.max.heartbeat.interval.ms"},
		{b.GroupConsumerHeartbeatIntervalMs >= b.GroupConsumerMinHeartbeatIntervalMs &&
			b.GroupConsumerHeartbeatIntervalMs <= b.GroupConsumerMaxHeartbeatIntervalMs, "group.consumer.heartbeat.interval.ms",
			"must be between group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms"},
		{b.GroupConsumerHeartbeatIntervalMs < b.GroupConsumerSessionTimeoutMs, "group.consumer.heartbeat.interval.ms",
			"must be less than group.consumer.session.timeout.ms"},
		// Kafka's checks of the replica fetchers' settings, on every node
		// (a single node has no fetcher, and Kafka refuses them there too).
		{b.Int64("replica.fetch.wait.max.ms") <= b.Int64("replica.socket.timeout.ms"), "replica.fetch.wait.max.ms",
			"must not exceed replica.socket.timeout.ms: a follower's fetch would time out while its leader waits for data"},
		{b.Int64("replica.fetch.wait.max.ms") <= b.Int64("replica.lag.time.max.ms"), "replica.fetch.wait.max.ms",
			"must not exceed replica.lag.time.max.ms: followers would leave the in-sync set while waiting for data"},
	}
	for _, r := range rels {
		if !r.ok {
			v, _ := b.value(r.name)
			return &ConfigError{Name: r.name, Value: v, Msg: r.msg}
		}
	}
	if len(b.LogDirs) == 0 {
		return &ConfigError{Name: "log.dirs", Msg: "no data directory configured"}
	}
	return nil
}
