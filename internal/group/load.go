package group

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// replayPartition rebuilds groups and offsets from one __consumer_offsets partition.
// Later records win; tombstones delete. Offset commits (key versions 0, 1), classic
// group metadata (2), KIP-848 consumer-group records (3..8) and streams-group records
// (17, 19..23) are understood, share-group records (10..15) are kept raw for the share manager
// (share_records.go); offset commits in transactional
// batches stay pending until their producer's marker, in log order (txn_offsets.go); a malformed batch
// stops the replay of that partition with a log line rather than failing the start-up.
func (c *Coordinator) replayPartition(p int32) error {
	var n int
	for gid := range c.shareRecs { // the log is the truth again
		if PartitionFor(gid, c.cfg.NumPartitions) == p {
			delete(c.shareRecs, gid)
		}
	}
	err := c.store.Replay(p, func(batches []byte) error {
		if err := walkBatches(batches, func(b batchInfo, key, value []byte) {
			n++
			if b.transactional {
				c.replayTxnRecord(b.producerID, key, value)
				return
			}
			c.replayRecord(key, value)
		}, func(producerID int64, commit bool) {
			c.completeTxn(p, producerID, commit)
		}); err != nil {
			c.log.Error("group: skipping unreadable __consumer_offsets data", "partition", p, "err", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n > 0 {
		c.log.Debug("group: loaded __consumer_offsets partition", "partition", p, "records", n)
	}
	// Loaded members must prove they are alive.
	for _, g := range c.groups {
		if PartitionFor(g.id, c.cfg.NumPartitions) != p {
			continue
		}
		for _, m := range g.members {
			c.scheduleSession(g, m)
		}
		if g.streamsLoad != nil {
			c.finishStreamsLoad(g) // streams_persist.go
		}
		if g.consumer != nil && !g.isStreams() {
			c.finishConsumerLoad(g)
		}
	}
	return nil
}

func (c *Coordinator) replayRecord(key, value []byte) {
	if len(key) < 2 {
		return
	}
	switch v := binary.BigEndian.Uint16(key); {
	case v >= uint16(keyTypeConsumerGroupMetadata) && v <= uint16(keyTypeConsumerGroupCurrentMember):
		c.replayConsumerRecord(key, value)
	case isStreamsKeyType(int16(v)):
		c.replayStreamsRecord(key, value)
	case isShareKeyType(int16(v)):
		c.replayShareRecord(key, value) // share_records.go
	case v == 0 || v == 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil {
			return
		}
		tp := topicPartition{k.Topic, k.Partition}
		if value == nil {
			if g := c.groups[k.Group]; g != nil {
				delete(g.offsets, tp)
			}
			c.dropPendingTxnOffsets(k.Group, tp) // as the live tombstone did
			return
		}
		var v kmsg.OffsetCommitValue
		if v.ReadFrom(value) != nil {
			return
		}
		g := c.groups[k.Group]
		if g == nil {
			g = newGroup(k.Group, time.UnixMilli(v.CommitTimestamp))
			c.groups[k.Group] = g
		}
		le := int32(-1)
		if v.Version >= 3 {
			le = v.LeaderEpoch
		}
		g.offsets[tp] = committedOffset{offset: v.Offset, leaderEpoch: le, metadata: v.Metadata, commitMs: v.CommitTimestamp, seq: c.nextSeq()}
	case v == 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) != nil {
			return
		}
		if value == nil {
			if g := c.groups[k.Group]; g != nil {
				g.stopTimers()
				delete(c.groups, k.Group)
			}
			return
		}
		var v kmsg.GroupMetadataValue
		if v.ReadFrom(value) != nil {
			return
		}
		g := c.groups[k.Group]
		if g == nil {
			g = newGroup(k.Group, c.clock.Now())
			c.groups[k.Group] = g
		}
		g.stopTimers()
		g.consumer = nil // a consumer group that turned classic
		g.members = make(map[string]*member)
		g.static = make(map[string]string)
		g.protocolType = v.ProtocolType
		g.generation = v.Generation
		g.protocol, g.leader = "", ""
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.Leader != nil {
			g.leader = *v.Leader
		}
		since := c.clock.Now()
		if v.CurrentStateTimestamp > 0 {
			since = time.UnixMilli(v.CurrentStateTimestamp)
		}
		for _, vm := range v.Members {
			m := &member{
				id:               vm.MemberID,
				instanceID:       vm.InstanceID,
				clientID:         vm.ClientID,
				clientHost:       vm.ClientHost,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				protocolType:     v.ProtocolType,
				protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
				assignment:       vm.Assignment,
			}
			if m.rebalanceTimeout <= 0 {
				m.rebalanceTimeout = m.sessionTimeout
			}
			g.members[m.id] = m
			if m.instanceID != nil {
				g.static[*m.instanceID] = m.id
			}
		}
		if len(g.members) == 0 {
			g.transition(stateEmpty, since)
		} else {
			g.transition(stateStable, since)
		}
	}
}
