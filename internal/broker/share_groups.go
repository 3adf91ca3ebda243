// Share groups (KIP-932) in the broker: a start hook creates the share manager
// (internal/share: membership, share sessions and share-partition state), replays
// __share_group_state when this broker becomes leader of its partitions, and runs a
// timer that releases expired acquisition locks and removes members whose session
// timed out. The handlers (share_group_heartbeat.go, share_group_describe.go,
// share_fetch.go, share_acknowledge.go) are thin over it.
//
// This broker owns the state of the share partitions it leads and writes it itself to
// __share_group_state (a compacted internal topic created at the first write, with
// share.coordinator.state.topic.num.partitions partitions); there is no separate share
// coordinator and no Initialize/Read/Write/DeleteShareGroupState RPC. On a cluster
// node the state is kept in memory only.
package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
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
	single := b.cluster == nil && b.clusterCfg == nil
	if single {
		opts.Store = shareStateStore{b}
		if _, ok := b.topics.Get(ShareStateTopic); ok {
			if _, err := b.ensureShareStateTopic(); err != nil {
				return err
			}
		}
	}
	opts.ConfigStore = groupConfigStore{b}
	b.shares = share.New(opts)
	if err := b.loadGroupConfigs(); err != nil {
		return fmt.Errorf("reading %s: %w", groupConfigsFileName, err)
	}
	if single {
		b.replicas.Listen(internalPartitionListener(ShareStateTopic, b.loadShareState, func(int32) {}))
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

// loadShareState replays partition p of __share_group_state into the manager.
func (b *Broker) loadShareState(p int32) error {
	return replayLog(b.replicas.Get(ShareStateTopic, p), func(buf []byte) error {
		for len(buf) > 0 {
			h, err := batch.ParseHeader(buf)
			if err != nil || h.TotalSize() > len(buf) {
				return nil
			}
			one := buf[:h.TotalSize()]
			buf = buf[h.TotalSize():]
			if h.IsControl() {
				continue
			}
			recs, err := batch.Records(one, 0)
			if err != nil {
				return fmt.Errorf("%s-%d: %w", ShareStateTopic, p, err)
			}
			for _, r := range recs {
				if err := b.shares.Load(r.Key, r.Value); err != nil {
					b.logger.Warn("share: skipping bad state record", "partition", p, "offset", h.BaseOffset, "err", err)
				}
			}
		}
		return nil
	})
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

// shareStateStore writes snapshots to __share_group_state, one record per
// share partition (its key), in the partition its coordinator key hashes to.
type shareStateStore struct{ b *Broker }

func (s shareStateStore) Write(k share.Key, value []byte) error {
	n, err := s.b.ensureShareStateTopic()
	if err != nil {
		return err
	}
	p := k.StatePartition(n)
	part := s.b.replicas.Get(ShareStateTopic, p)
	if part == nil {
		return fmt.Errorf("%s-%d does not exist", ShareStateTopic, p)
	}
	rec := batch.NewBatch(0, time.Now().UnixMilli(), batch.KV{Key: share.EncodeKey(k), Value: value})
	if _, err := part.AppendAsLeader(rec, log.AppendOptions{Coordinator: true}, 0); err != nil {
		return err
	}
	return nil
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
