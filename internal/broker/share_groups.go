// Share groups (KIP-932) in the broker: a start hook creates the share manager
// (internal/share: membership, share sessions and share-partition state), replays
// __share_group_state when this broker becomes leader of its partitions, and runs a
// timer that releases expired acquisition locks and removes members whose session
// timed out. The handlers (share_group_heartbeat.go, share_group_describe.go,
// share_fetch.go, share_acknowledge.go) are thin over it. Share-group membership
// is written to __consumer_offsets through the group coordinator and loaded from
// it with each of its partitions (share_membership.go, internal/share/membership.go).
//
// This broker keeps the state of the share partitions it leads in memory, reads it from
// the share coordinator (share_coordinator.go) when it starts to lead one, and writes
// every change to it; the coordinator persists it in __share_group_state (a compacted
// internal topic created at the first use, with share.coordinator.state.topic.*
// settings).
package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// ShareStateTopic is the internal topic holding share-partition state.
const ShareStateTopic = "__share_group_state"

func (b *Broker) startShareGroups() error {
	c := b.cfg
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	opts := share.Options{
		Config: share.Config{
			RecordLockDuration: ms(c.GroupShareRecordLockDurationMs),
			DeliveryCountLimit: c.GroupShareDeliveryCountLimit,
			MaxRecordLocks:     c.GroupSharePartitionMaxRecordLocks,
			HeartbeatInterval:  ms(c.GroupShareHeartbeatIntervalMs),
			SessionTimeout:     ms(c.GroupShareSessionTimeoutMs),
			MaxGroupSize:       c.GroupShareMaxSize,
			AutoOffsetReset:    c.ShareAutoOffsetReset,
		},
		Topics:     shareTopics{b},
		OtherGroup: b.isNonShareGroup,
	}
	opts.Store = shareStateStore{b} // share_coordinator.go
	opts.Read = b.readShareState
	opts.Config.OnDeadLetter = b.deadLetterSink()            // share_dead_letters.go
	opts.Config.EvaluateGroupConfig = b.evaluateGroupConfigs // group_config_bounds.go
	opts.InitState = b.initShareStates                       // share_init_state.go
	if single := b.cluster == nil && b.clusterCfg == nil; single {
		if _, ok := b.topics.Get(ShareStateTopic); ok {
			if _, err := b.ensureShareStateTopic(); err != nil {
				return err
			}
		}
	}
	opts.ConfigStore = groupConfigStore{b}
	opts.Now = b.nowFunc() // test_clock.go
	// Membership in __consumer_offsets (internal/share/membership.go).
	if b.groups != nil {
		opts.Membership = b.groups
		opts.Logf = func(format string, args ...any) { b.logger.Warn(fmt.Sprintf(format, args...)) }
	}
	b.shares = share.New(opts)
	if b.groups != nil {
		b.shares.LoadMembership(b.groups.ShareRecords())
	}
	if err := b.loadGroupConfigs(); err != nil {
		return fmt.Errorf("reading %s: %w", groupConfigsFileName, err)
	}
	if err := b.startShareCoordinator(); err != nil {
		return err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				b.shares.ExpireAll()
			}
		}
	}()
	b.onClose(func() error { close(stop); <-done; return nil })
	return nil
}

// isNonShareGroup reports whether a classic or consumer group has the id.
func (b *Broker) isNonShareGroup(id string) bool {
	if b.groups == nil {
		return false
	}
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	for _, g := range b.groups.ListGroups(req).Groups {
		if g.Group == id {
			return true
		}
	}
	return false
}

// ensureShareStateTopic creates __share_group_state (compacted) when missing, opens
// its logs, and returns its partition count.
func (b *Broker) ensureShareStateTopic() (int32, error) {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if t, ok := b.topics.Get(ShareStateTopic); ok {
		for p := int32(0); p < t.Partitions; p++ {
			if b.logs.Get(ShareStateTopic, p) == nil {
				cfg, err := b.logConfig(t.Configs)
				if err != nil {
					return 0, err
				}
				if _, err := b.logs.Open(ShareStateTopic, p, cfg); err != nil {
					return 0, err
				}
			}
		}
		return t.Partitions, nil
	}
	n := b.cfg.ShareStateTopicNumPartitions
	if n <= 0 {
		n = 50
	}
	overrides := map[string]string{"cleanup.policy": "compact"}
	if b.cfg.ShareStateTopicSegmentBytes > 0 {
		overrides["segment.bytes"] = fmt.Sprint(b.cfg.ShareStateTopicSegmentBytes)
	}
	cfg, err := b.logConfig(overrides)
	if err != nil {
		return 0, err
	}
	if _, err := b.createTopic(ShareStateTopic, n, 1, overrides, cfg, nil); err != nil {
		return 0, fmt.Errorf("sluice: creating %s: %w", ShareStateTopic, err)
	}
	return n, nil
}

// shareTopics is share.Topics over the topic registry.
type shareTopics struct{ b *Broker }

func (s shareTopics) Topic(name string) (share.TopicInfo, bool) {
	t, ok := s.b.topics.Get(name)
	if !ok {
		return share.TopicInfo{}, false
	}
	return share.TopicInfo{Name: t.Name, ID: [16]byte(t.ID), Partitions: t.Partitions}, true
}

func (s shareTopics) TopicByID(id [16]byte) (share.TopicInfo, bool) {
	t, ok := s.b.topicByID(id)
	if !ok {
		return share.TopicInfo{}, false
	}
	return share.TopicInfo{Name: t.Name, ID: [16]byte(t.ID), Partitions: t.Partitions}, true
}
