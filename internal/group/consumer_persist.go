package group

import (
	"bytes"
	"encoding/binary"
	"sort"
)

// Durable KIP-848 consumer groups. A consumer group is written to __consumer_offsets
// as Apache Kafka writes it: one group-epoch record (type 3), one subscribed-topics
// metadata record (4), one target-assignment-epoch record (6) and, per member, a
// subscription record (5), a target-assignment record (7) and a current-assignment
// record (8). Keys that disappear (a member leaves or expires, the group is deleted or
// turns classic) are tombstoned, members' records before the group's, so that a replay
// never sees a group's end before its members'.
//
// Each group remembers the encoded value of every consumer-group record it has in the
// log (group.cgRecords). After a change the coordinator encodes the records the group
// should have, writes those whose value differs and tombstones those it no longer
// has: a heartbeat that changes nothing writes nothing. A failed write leaves the
// memory ahead of the log; the group is marked dirty and the next change writes the
// whole difference.

// consumerTombstoneOrder is the reverse of the order consumerRecords writes in
// (subscriptions and the group epoch, then the target assignment, then current
// assignments): current assignments first, the group epoch
// (whose tombstone deletes the group on replay) last.
var consumerTombstoneOrder = map[int16]int{
	keyTypeConsumerGroupCurrentMember:     0,
	keyTypeConsumerGroupTargetMember:      1,
	keyTypeConsumerGroupMemberMetadata:    2,
	keyTypeConsumerGroupTargetMetadata:    3,
	keyTypeConsumerGroupPartitionMetadata: 4,
	keyTypeConsumerGroupMetadata:          5,
	// streams groups (streams_persist.go), in the same order
	keyTypeStreamsGroupCurrentMember:  0,
	keyTypeStreamsGroupTargetMember:   1,
	keyTypeStreamsGroupMemberMetadata: 2,
	keyTypeStreamsGroupTargetMetadata: 3,
	keyTypeStreamsGroupTopology:       4,
	keyTypeStreamsTopologyDescription: 4,
	keyTypeStreamsGroupMetadata:       5,
}

// consumerRecords encodes the records g's consumer group should have in the log: all
// of them, or (only != nil) the group-level ones and only's. It returns nothing for a
// group that is not a consumer group.
func consumerRecords(g *group, only *consumerMember) []record {
	cg := g.consumer
	if cg == nil {
		return nil
	}
	var members []*consumerMember
	if only != nil {
		members = []*consumerMember{only}
	} else {
		ids := make([]string, 0, len(cg.members))
		for id := range cg.members {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			members = append(members, cg.members[id])
		}
	}
	key := func(typ int16, member string) []byte {
		return consumerKey{typ: typ, group: g.id, member: member}.encode()
	}
	recs := make([]record, 0, 3+3*len(members))
	for _, m := range members {
		recs = append(recs, record{key(keyTypeConsumerGroupMemberMetadata, m.id), encodeMemberMetadataValue(cgMemberMetadata{
			instanceID:         m.instanceID,
			rackID:             m.rackID,
			clientID:           m.clientID,
			clientHost:         m.clientHost,
			subscribed:         m.subscribed,
			regex:              m.regex,
			rebalanceTimeoutMs: ms(m.rebalanceTimeout),
			serverAssignor:     m.serverAssignor,
		})})
	}
	recs = append(recs,
		record{key(keyTypeConsumerGroupPartitionMetadata, ""), encodePartitionMetadataValue(cg.metaTopics)},
		record{key(keyTypeConsumerGroupMetadata, ""), encodeEpochValue(cg.epoch)})
	for _, m := range members {
		recs = append(recs, record{key(keyTypeConsumerGroupTargetMember, m.id), encodeTargetMemberValue(toTopicPartitions(cg.target[m.id]))})
	}
	recs = append(recs, record{key(keyTypeConsumerGroupTargetMetadata, ""), encodeEpochValue(cg.assignmentEpoch)})
	for _, m := range members {
		recs = append(recs, record{key(keyTypeConsumerGroupCurrentMember, m.id), encodeCurrentAssignmentValue(cgCurrentAssignment{
			epoch:     m.epoch,
			prevEpoch: m.prevEpoch,
			state:     int8(m.state),
			assigned:  toTopicPartitions(m.assigned),
			revoking:  toTopicPartitions(m.revoking),
		})})
	}
	return recs
}

// staleConsumerRecords returns tombstones for every consumer-group key g has in the
// log that is not in want, in tombstone order.
func staleConsumerRecords(g *group, want []record) []record {
	keep := make(map[string]bool, len(want))
	for _, r := range want {
		keep[string(r.key)] = true
	}
	var stale []string
	for k := range g.cgRecords {
		if !keep[k] {
			stale = append(stale, k)
		}
	}
	sort.Slice(stale, func(i, j int) bool {
		oi, oj := consumerTombstoneOrder[keyType(stale[i])], consumerTombstoneOrder[keyType(stale[j])]
		if oi != oj {
			return oi < oj
		}
		return stale[i] < stale[j]
	})
	out := make([]record, len(stale))
	for i, k := range stale {
		out[i] = record{key: []byte(k)}
	}
	return out
}

func keyType(k string) int16 {
	if len(k) < 2 {
		return -1
	}
	return int16(binary.BigEndian.Uint16([]byte(k[:2])))
}

// consumerTombstones are the tombstones that delete every consumer-group record of g
// (for DeleteGroups and offset expiry, ahead of the group's other tombstones).
func consumerTombstones(g *group) []record { return staleConsumerRecords(g, nil) }

// forgetConsumerRecords is called once consumerTombstones have been written.
func forgetConsumerRecords(g *group) {
	g.cgRecords = nil
	g.cgDirty = false
}

// persistConsumer writes what changed in g's consumer group since its last write:
// everything (only == nil, or after a failed write) or only the group-level records
// and only's. A group that is no longer a consumer group gets all its consumer-group
// records tombstoned.
func (c *Coordinator) persistConsumer(g *group, only *consumerMember) {
	if c.store == nil {
		return
	}
	if g.cgDirty || g.consumer == nil || g.isStreams() {
		only = nil
	}
	var want []record
	if g.isStreams() {
		want = streamsRecords(g) // streams_persist.go
	} else {
		want = consumerRecords(g, only)
	}
	var recs []record
	for _, r := range want {
		if old, ok := g.cgRecords[string(r.key)]; !ok || !bytes.Equal(old, r.value) {
			recs = append(recs, r)
		}
	}
	if only == nil {
		recs = append(recs, staleConsumerRecords(g, want)...)
	}
	if len(recs) == 0 {
		return
	}
	if err := c.persist(g.id, recs...); err != nil {
		g.cgDirty = true // the memory is ahead of the log; the next change writes it all
		return
	}
	g.cgDirty = false
	for _, r := range recs {
		g.setConsumerRecord(string(r.key), r.value)
	}
}

// setConsumerRecord notes that the log holds value (nil: nothing) under key.
func (g *group) setConsumerRecord(key string, value []byte) {
	if value == nil {
		delete(g.cgRecords, key)
		return
	}
	if g.cgRecords == nil {
		g.cgRecords = make(map[string][]byte)
	}
	g.cgRecords[key] = value
}

// topicsSignature identifies the subscribed topics' metadata (names, ids, partition
// counts); a change starts a new group epoch.
func topicsSignature(topics []cgTopicMetadata) string {
	var b []byte
	for _, t := range topics {
		b = append(b, t.name...)
		b = append(b, '/')
		b = append(b, t.id[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(t.partitions))
		b = append(b, ';')
	}
	return string(b)
}
