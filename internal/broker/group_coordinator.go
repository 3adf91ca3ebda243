// The group coordinator's place in the broker: a start hook creates the compacted
// __consumer_offsets topic (offsets.topic.num.partitions partitions) if it does not
// exist, starts the group.Coordinator over it (replaying every partition, so groups and
// committed offsets survive restarts), registers the consumer-lag collector, and closes
// the coordinator on shutdown. The group handlers (find_coordinator.go, join_group.go,
// ...) are thin: they pass the decoded request to b.groups and return its response.
package broker

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func (b *Broker) startGroupCoordinator() error {
	n, err := b.ensureOffsetsTopic()
	if err != nil {
		return err
	}
	c := b.cfg
	cfg := group.Config{
		NumPartitions:                 n,
		OffsetsRetention:              time.Duration(c.OffsetsRetentionMinutes) * time.Minute,
		OffsetsRetentionCheckInterval: time.Duration(c.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
		InitialRebalanceDelay:         time.Duration(c.GroupInitialRebalanceDelayMs) * time.Millisecond,
		MinSessionTimeout:             time.Duration(c.GroupMinSessionTimeoutMs) * time.Millisecond,
		MaxSessionTimeout:             time.Duration(c.GroupMaxSessionTimeoutMs) * time.Millisecond,
		MaxGroupSize:                  c.GroupMaxSize,
		ConsumerSessionTimeout:        time.Duration(c.GroupConsumerSessionTimeoutMs) * time.Millisecond,
		ConsumerHeartbeatInterval:     time.Duration(c.GroupConsumerHeartbeatIntervalMs) * time.Millisecond,
		ConsumerAssignors:             assignorNames(c.GroupConsumerAssignors),
		StreamsSessionTimeout:         rawMs(c.Raw, "group.streams.session.timeout.ms"),
		StreamsHeartbeatInterval:      rawMs(c.Raw, "group.streams.heartbeat.interval.ms"),
		StreamsNumStandbyReplicas:     int(rawMs(c.Raw, "group.streams.num.standby.replicas") / time.Millisecond),
		StreamsTaskOffsetInterval:     rawMs(c.Raw, "group.streams.task.offset.interval.ms"),
		StreamsAcceptableRecoveryLag:  b.brokerInt("group.streams.acceptable.recovery.lag"),
		GroupConfigs:                  b.groupConfigsOf, // streams_group_configs.go
		StreamsInitialRebalanceDelay:  time.Duration(b.brokerInt("group.streams.initial.rebalance.delay.ms")) * time.Millisecond,
		StreamsAssignmentInterval:     time.Duration(b.brokerInt("group.streams.assignment.interval.ms")) * time.Millisecond,
		StreamsRackAwareTags:          share.SplitList(b.brokerString("group.streams.rack.aware.assignment.tags")),
	}
	if c.GroupInitialRebalanceDelayMs == 0 {
		cfg.InitialRebalanceDelay = -1 // explicitly no delay
	}
	if cfg.StreamsAcceptableRecoveryLag == 0 {
		cfg.StreamsAcceptableRecoveryLag = -1 // explicitly 0 (streams_group_configs.go)
	}
	b.groups = group.New(group.Options{
		Config:  cfg,
		Storage: offsetsStorage{b},
		Topics:  groupTopics{b},
		Logger:  b.logger,
		Leads:   b.leadsInternal(group.OffsetsTopic),
		Clock:   b.groupClock(),
	})
	if err := b.groups.Start(); err != nil {
		return err
	}
	b.replicas.Listen(b.groupPartitionListener()) // coordinator_loader.go
	if err := b.loadLedPartitions(group.OffsetsTopic, b.loadGroupPartition); err != nil {
		return err
	}
	if err := b.metrics.Registry.Register(b.groups.Collector()); err != nil {
		b.logger.Error("group: registering lag metrics", "err", err)
	}
	b.onClose(func() error { b.groups.Close(); return nil })
	return nil
}

// assignorNames maps group.consumer.assignors (Kafka's class names or short names) to
// the coordinator's assignor names, keeping the order; unknown entries are dropped.
func assignorNames(list []string) []string {
	var out []string
	for _, a := range list {
		l := strings.ToLower(strings.TrimSpace(a))
		switch {
		case strings.HasSuffix(l, "uniformassignor") || l == "uniform":
			out = append(out, "uniform")
		case strings.HasSuffix(l, "rangeassignor") || l == "range":
			out = append(out, "range")
		}
	}
	return out
}

// ensureOffsetsTopic creates __consumer_offsets (compacted) when missing and returns its
// partition count; an existing topic keeps its count, since group placement hashes on it.
func (b *Broker) ensureOffsetsTopic() (int32, error) {
	if b.cluster != nil || b.clusterCfg != nil {
		// A cluster node: the topic is created through the controller when a
		// client first looks for a coordinator (FindCoordinator).
		return b.internalTopicPartitions(group.OffsetsTopic, b.cfg.OffsetsTopicNumPartitions), nil
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if t, ok := b.topics.Get(group.OffsetsTopic); ok {
		for p := int32(0); p < t.Partitions; p++ {
			if b.logs.Get(group.OffsetsTopic, p) == nil {
				cfg, err := b.logConfig(t.Configs)
				if err != nil {
					return 0, err
				}
				if _, err := b.logs.Open(group.OffsetsTopic, p, cfg); err != nil {
					return 0, err
				}
			}
		}
		return t.Partitions, nil
	}
	n := b.cfg.OffsetsTopicNumPartitions
	if n <= 0 {
		n = 50
	}
	overrides := map[string]string{"cleanup.policy": "compact"}
	if b.cfg.OffsetsTopicSegmentBytes > 0 {
		overrides["segment.bytes"] = fmt.Sprint(b.cfg.OffsetsTopicSegmentBytes)
	}
	cfg, err := b.logConfig(overrides)
	if err != nil {
		return 0, err
	}
	if _, err := b.createTopic(group.OffsetsTopic, n, 1, overrides, cfg, nil); err != nil {
		return 0, fmt.Errorf("sluice: creating %s: %w", group.OffsetsTopic, err)
	}
	return n, nil
}

// offsetsStorage is group.Storage over the __consumer_offsets partition logs.
type offsetsStorage struct{ b *Broker }

func (s offsetsStorage) Append(p int32, batch []byte) error {
	part := s.b.replicas.Get(group.OffsetsTopic, p)
	if part == nil {
		return fmt.Errorf("%s-%d does not exist", group.OffsetsTopic, p)
	}
	// Every write here comes from a coordinator: group records, transactional offset
	// commits of a producer (base sequence -1) and the transaction markers ending them.
	_, err := part.AppendReplicated(batch, log.AppendOptions{Coordinator: true, AllowControl: true}, coordinatorWriteTimeout)
	return err
}

// coordinatorWriteTimeout bounds how long a coordinator's write waits for
// its in-sync replicas (Kafka's offsets.commit.timeout.ms default).
const coordinatorWriteTimeout = 5 * time.Second

func (s offsetsStorage) Replay(p int32, fn func([]byte) error) error {
	return replayLog(s.b.replicas.Get(group.OffsetsTopic, p), fn)
}

// replayLog calls fn with the whole batches of l (nil: nothing), from the log start to
// the end, in order.
func replayLog(l *replica.Partition, fn func([]byte) error) error {
	if l == nil {
		return nil
	}
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		buf, err := l.ReadBytesToEnd(off, 1<<20)
		if err != nil {
			return err
		}
		next := nextOffsetAfter(buf)
		if len(buf) == 0 || next <= off {
			break
		}
		if err := fn(buf); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// nextOffsetAfter returns the offset following the last whole batch in buf.
func nextOffsetAfter(buf []byte) int64 {
	next := int64(-1)
	for len(buf) >= 61 {
		size := int64(int32(binary.BigEndian.Uint32(buf[8:]))) + 12
		if size < 61 || size > int64(len(buf)) {
			break
		}
		base := int64(binary.BigEndian.Uint64(buf))
		next = base + int64(int32(binary.BigEndian.Uint32(buf[23:]))) + 1
		buf = buf[size:]
	}
	return next
}

// groupTopics is group.Topics over the topic registry and the logs.
type groupTopics struct{ b *Broker }

func (g groupTopics) Topic(name string) (group.TopicInfo, bool) {
	t, ok := g.b.topics.Get(name)
	if !ok {
		return group.TopicInfo{}, false
	}
	return group.TopicInfo{Name: t.Name, ID: [16]byte(t.ID), Partitions: t.Partitions, Internal: topics.IsInternal(t.Name)}, true
}

func (g groupTopics) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	t, ok := g.b.topicByID(id)
	if !ok {
		return group.TopicInfo{}, false
	}
	return group.TopicInfo{Name: t.Name, ID: [16]byte(t.ID), Partitions: t.Partitions, Internal: topics.IsInternal(t.Name)}, true
}

func (g groupTopics) AllTopics() []group.TopicInfo {
	list := g.b.topics.List()
	out := make([]group.TopicInfo, 0, len(list))
	for _, t := range list {
		out = append(out, group.TopicInfo{Name: t.Name, ID: [16]byte(t.ID), Partitions: t.Partitions, Internal: topics.IsInternal(t.Name)})
	}
	return out
}

func (g groupTopics) EndOffset(topic string, p int32) (int64, bool) {
	part := g.b.replicas.Get(topic, p)
	if part == nil {
		return 0, false
	}
	return part.HighWatermark(), true
}

// groupClient is the coordinator's view of who sent r.
func groupClient(r *wire.Request) group.Client {
	c := group.Client{ID: r.Header.ClientIDString()}
	if r.Remote != nil {
		host := r.Remote.String()
		if i := strings.LastIndexByte(host, ':'); i > 0 {
			host = host[:i]
		}
		c.Host = "/" + strings.Trim(host, "[]")
	}
	return c
}
