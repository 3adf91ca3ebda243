package group

import (
	"sort"
	"time"
)

// replayConsumerRecord applies one KIP-848 consumer-group record (key types 3..8) read
// from __consumer_offsets. Records may come in any order within a group's history;
// finishConsumerLoad ties the pieces together once the partition is read. A record
// that cannot be decoded is skipped with a log line.
func (c *Coordinator) replayConsumerRecord(key, value []byte) {
	k, err := decodeConsumerKey(key)
	if err != nil {
		c.log.Warn("group: skipping unreadable consumer-group record key", "err", err)
		return
	}
	g := c.groups[k.group]
	if value == nil {
		if g == nil {
			return
		}
		g.setConsumerRecord(string(key), nil)
		cg := g.consumer
		if cg == nil {
			return
		}
		switch k.typ {
		case keyTypeConsumerGroupMetadata: // the group was deleted or turned classic
			g.consumer = nil
			g.protocolType = ""
		case keyTypeConsumerGroupPartitionMetadata:
			cg.metaTopics = nil
		case keyTypeConsumerGroupMemberMetadata:
			delete(cg.members, k.member)
		case keyTypeConsumerGroupTargetMember:
			delete(cg.target, k.member)
		case keyTypeConsumerGroupCurrentMember:
			if m := cg.members[k.member]; m != nil {
				m.epoch, m.prevEpoch, m.state = 0, 0, memberStable
				m.assigned, m.revoking = make(partitionSet), nil
			}
		}
		return
	}

	apply, err := decodeConsumerValue(k, value)
	if err != nil {
		c.log.Warn("group: skipping unreadable consumer-group record", "group", k.group, "type", k.typ, "err", err)
		return
	}
	now := c.clock.Now()
	if g == nil {
		g = newGroup(k.group, now)
		c.groups[k.group] = g
	}
	if g.consumer == nil {
		// An empty classic group became a consumer group after its last GroupMetadata.
		g.stopTimers()
		g.members = make(map[string]*member)
		g.static = make(map[string]string)
		g.protocol, g.leader = "", ""
		g.transition(stateEmpty, now)
		g.consumer = newConsumerGroup(now)
		g.protocolType = "consumer"
	}
	g.setConsumerRecord(string(key), append([]byte(nil), value...))
	apply(g.consumer)
}

// decodeConsumerValue decodes value for key k and returns how to apply it.
func decodeConsumerValue(k consumerKey, value []byte) (func(*consumerGroup), error) {
	member := func(cg *consumerGroup) *consumerMember {
		m := cg.members[k.member]
		if m == nil {
			m = &consumerMember{id: k.member, assigned: make(partitionSet)}
			cg.members[k.member] = m
		}
		return m
	}
	switch k.typ {
	case keyTypeConsumerGroupMetadata:
		epoch, err := decodeEpochValue(value, "ConsumerGroupMetadata")
		return func(cg *consumerGroup) { cg.epoch = epoch }, err
	case keyTypeConsumerGroupTargetMetadata:
		epoch, err := decodeEpochValue(value, "ConsumerGroupTargetAssignmentMetadata")
		return func(cg *consumerGroup) { cg.assignmentEpoch = epoch }, err
	case keyTypeConsumerGroupPartitionMetadata:
		topics, err := decodePartitionMetadataValue(value)
		return func(cg *consumerGroup) { cg.metaTopics = topics }, err
	case keyTypeConsumerGroupMemberMetadata:
		v, err := decodeMemberMetadataValue(value)
		return func(cg *consumerGroup) {
			m := member(cg)
			m.instanceID, m.rackID = v.instanceID, v.rackID
			m.clientID, m.clientHost = v.clientID, v.clientHost
			m.subscribed = v.subscribed
			m.regex = v.regex
			if m.regex != nil && *m.regex == "" {
				m.regex = nil
			}
			m.rebalanceTimeout = time.Duration(v.rebalanceTimeoutMs) * time.Millisecond
			m.serverAssignor = v.serverAssignor
		}, err
	case keyTypeConsumerGroupTargetMember:
		tps, err := decodeTargetMemberValue(value)
		return func(cg *consumerGroup) { cg.target[k.member] = fromTopicPartitions(tps) }, err
	default: // keyTypeConsumerGroupCurrentMember
		v, err := decodeCurrentAssignmentValue(value)
		return func(cg *consumerGroup) {
			m := member(cg)
			m.epoch, m.prevEpoch = v.epoch, v.prevEpoch
			switch reconcileState(v.state) {
			case memberUnrevoked, memberUnreleased:
				m.state = reconcileState(v.state)
			default:
				m.state = memberStable
			}
			m.assigned = fromTopicPartitions(v.assigned)
			m.revoking = nil
			if len(v.revoking) > 0 {
				m.revoking = fromTopicPartitions(v.revoking)
			}
			if m.state == memberUnrevoked && len(m.revoking) == 0 {
				m.state = memberStable
			}
		}, err
	}
}

// finishConsumerLoad makes a replayed consumer group whole: members known only from
// assignment records are dropped, partition owners and static ids are rebuilt,
// subscriptions are resolved against today's topics, and every member's session timer
// is armed, so a member that heartbeats (or commits) within its session timeout keeps
// its id, epoch and partitions, and one that does not is removed.
func (c *Coordinator) finishConsumerLoad(g *group) {
	cg := g.consumer
	now := c.clock.Now()
	for id := range cg.members {
		if _, ok := g.cgRecords[string(consumerKey{typ: keyTypeConsumerGroupMemberMetadata, group: g.id, member: id}.encode())]; !ok {
			c.log.Warn("group: dropping consumer member without subscription record", "group", g.id, "member", id)
			delete(cg.members, id)
		}
	}
	for id := range cg.target {
		if cg.members[id] == nil {
			delete(cg.target, id)
		}
	}
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	clear(cg.static)
	clear(cg.owner)
	for _, id := range ids {
		m := cg.members[id]
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		for p := range m.assigned {
			cg.owner[p] = id
		}
		for p := range m.revoking {
			cg.owner[p] = id
		}
	}
	cg.metaSig = topicsSignature(cg.metaTopics)
	c.refreshSubscriptions(cg) // members' resolved topics; the signature is compared at the next heartbeat
	cg.assignor = c.chooseAssignor(cg)
	cg.emptySince = now
	for _, id := range ids {
		c.scheduleConsumerSession(g, cg.members[id])
	}
	c.log.Debug("group: loaded consumer group", "group", g.id, "epoch", cg.epoch, "members", len(ids))
}
