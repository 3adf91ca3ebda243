package share

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Durable share-group membership, as Apache Kafka's group coordinator keeps it:
// each group's epochs, members and assignments are written to the group's
// __consumer_offsets partition in Kafka's share-group records
// (ShareGroupMemberMetadata 10: rack, client id and host, subscribed topics;
// ShareGroupMetadata 11: the group epoch (metadata hash 0);
// ShareGroupTargetAssignmentMetadata 12: the assignment epoch;
// ShareGroupTargetAssignmentMember 13 and ShareGroupCurrentMemberAssignment 14:
// a member's partitions, and its epochs in 14). The group coordinator stores
// them (internal/group/share_records.go: it writes only what changed and
// tombstones what is gone); the manager rebuilds its groups from them when it
// starts (LoadMembership) and when a heartbeat names a group it does not hold
// (a coordinator move), and every loaded member must heartbeat within its
// session timeout. ShareGroupStatePartitionMetadata (15) holds the share
// partitions whose state the group initialized (init_state.go).

// MembershipStore is where share-group records go: the group coordinator.
type MembershipStore interface {
	// WriteShareRecords makes the log hold exactly want as group's records.
	WriteShareRecords(group string, want map[string][]byte) error
	// ShareRecordsOf returns group's records as the log holds them (nil: none).
	ShareRecordsOf(group string) map[string][]byte
}

const (
	recMember        int16 = 10
	recGroup         int16 = 11
	recTargetEpoch   int16 = 12
	recTargetMember  int16 = 13
	recCurrentMember int16 = 14
	recStatePartMeta int16 = 15
)

func shareRecKey(t int16, group, member string) string {
	b := kbin.AppendInt16(nil, t)
	b = kbin.AppendString(b, group)
	if t == recMember || t == recTargetMember || t == recCurrentMember {
		b = kbin.AppendString(b, member)
	}
	return string(b)
}

func decodeShareRecKey(k string) (t int16, group, member string, ok bool) {
	r := kbin.Reader{Src: []byte(k)}
	t = r.Int16()
	group = r.String()
	if t == recMember || t == recTargetMember || t == recCurrentMember {
		member = r.String()
	}
	return t, group, member, r.Ok() && len(r.Src) == 0
}

func valueHeader() []byte { return kbin.AppendInt16(nil, 0) }

func appendTags0(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func appendTopicPartitions(b []byte, tps map[[16]byte][]int32) []byte {
	ids := sortedIDs(tps)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		ps := slices.Sorted(slices.Values(tps[id]))
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = appendTags0(b)
	}
	return b
}

type recReader struct{ kbin.Reader }

func newRecReader(v []byte) *recReader {
	r := &recReader{kbin.Reader{Src: v}}
	if ver := r.Int16(); ver != 0 {
		r.Src = nil
		r.Int8() // marks the reader bad
	}
	return r
}

func (r *recReader) n() int {
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return 0
	}
	return int(n)
}

func (r *recReader) skipTags() {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint()
		size := r.Uvarint()
		if int(size) > len(r.Src) {
			r.Src = nil
			r.Int8()
			return
		}
		r.Span(int(size))
	}
}

func (r *recReader) topicPartitions() map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	nt := r.n()
	for i := 0; i < nt && r.Ok(); i++ {
		id := r.Uuid()
		np := r.n()
		for j := 0; j < np && r.Ok(); j++ {
			out[id] = append(out[id], r.Int32())
		}
		r.skipTags()
	}
	return out
}

// membershipRecordsLocked encodes the records g should have in the log.
func membershipRecordsLocked(g *Group) map[string][]byte {
	out := map[string][]byte{}
	for id, mb := range g.members {
		v := valueHeader()
		v = kbin.AppendCompactNullableString(v, mb.rack)
		v = kbin.AppendCompactString(v, mb.clientID)
		v = kbin.AppendCompactString(v, mb.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(mb.topics))
		for _, t := range mb.topics {
			v = kbin.AppendCompactString(v, t)
		}
		out[shareRecKey(recMember, g.ID, id)] = appendTags0(v)

		out[shareRecKey(recTargetMember, g.ID, id)] = appendTags0(appendTopicPartitions(valueHeader(), mb.assigned))

		v = valueHeader()
		v = kbin.AppendInt32(v, mb.epoch)
		v = kbin.AppendInt32(v, mb.prevEpoch)
		v = kbin.AppendInt8(v, 0) // STABLE: share groups have no revocation
		out[shareRecKey(recCurrentMember, g.ID, id)] = appendTags0(appendTopicPartitions(v, mb.assigned))
	}
	v := kbin.AppendInt32(valueHeader(), g.Epoch)
	v = kbin.AppendInt64(v, 0) // metadata hash
	out[shareRecKey(recGroup, g.ID, "")] = appendTags0(v)
	out[shareRecKey(recTargetEpoch, g.ID, "")] = appendTags0(kbin.AppendInt32(valueHeader(), g.AssignmentEpoch))
	if len(g.initialized) > 0 {
		out[shareRecKey(recStatePartMeta, g.ID, "")] = statePartitionMetadataValue(g) // init_state.go
	}
	return out
}

// groupFromRecords rebuilds a group from its records (nil: no group record).
func groupFromRecords(id string, recs map[string][]byte) (*Group, error) {
	g := &Group{ID: id, members: map[string]*member{}}
	found := false
	keys := make([]string, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mem := func(mid string) *member {
		if g.members[mid] == nil {
			g.members[mid] = &member{id: mid, assigned: map[[16]byte][]int32{}}
		}
		return g.members[mid]
	}
	for _, k := range keys {
		t, gid, mid, ok := decodeShareRecKey(k)
		if !ok || gid != id {
			continue
		}
		r := newRecReader(recs[k])
		switch t {
		case recGroup:
			g.Epoch = r.Int32()
			r.Int64()
			found = true
		case recTargetEpoch:
			g.AssignmentEpoch = r.Int32()
		case recMember:
			mb := mem(mid)
			mb.rack = r.CompactNullableString()
			mb.clientID, mb.clientHost = r.CompactString(), r.CompactString()
			n := r.n()
			mb.topics = nil
			for i := 0; i < n && r.Ok(); i++ {
				mb.topics = append(mb.topics, r.CompactString())
			}
			mb.hasMeta = true
		case recCurrentMember:
			mb := mem(mid)
			mb.epoch, mb.prevEpoch = r.Int32(), r.Int32()
			r.Int8()
			mb.assigned = r.topicPartitions()
		case recStatePartMeta:
			readStatePartitionMetadata(r, g) // init_state.go
		default:
			continue
		}
		r.skipTags()
		if err := r.Complete(); err != nil {
			return nil, fmt.Errorf("share group %s: record type %d: %w", id, t, err)
		}
	}
	if !found {
		return nil, nil
	}
	for mid, mb := range g.members {
		if !mb.hasMeta { // a member's records without its metadata: dropped at the next write
			delete(g.members, mid)
		}
	}
	return g, nil
}

// membershipWriter serializes a manager's membership writes.
type membershipWriter struct{ mu sync.Mutex }

// persistMembership writes group id's membership as it is now (its
// tombstones when the group is gone).
func (m *Manager) persistMembership(ids ...string) {
	if m.members == nil {
		return
	}
	m.memberWriter.mu.Lock()
	defer m.memberWriter.mu.Unlock()
	for _, id := range ids {
		m.mu.Lock()
		var want map[string][]byte
		if g := m.groups[id]; g != nil {
			want = membershipRecordsLocked(g)
		}
		m.mu.Unlock()
		if err := m.members.WriteShareRecords(id, want); err != nil {
			m.logf("share: writing the membership of group %s: %v", id, err)
		}
	}
}

// LoadMembership rebuilds the share groups of recs (group -> records), as
// the group coordinator holds them when it loads a __consumer_offsets
// partition, replacing the groups' membership held in memory; every loaded
// member must heartbeat within its session timeout.
func (m *Manager) LoadMembership(recs map[string]map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, rs := range recs {
		m.loadGroupLocked(id, rs)
	}
}

func (m *Manager) loadGroupLocked(id string, rs map[string][]byte) *Group {
	g, err := groupFromRecords(id, rs)
	if err != nil {
		m.logf("share: %v", err)
		return nil
	}
	if g == nil {
		return nil
	}
	deadline := m.now().Add(m.effectiveLocked(id).SessionTimeout)
	for _, mb := range g.members {
		mb.deadline = deadline
	}
	g.topicsHash = m.topicsHashLocked(g)
	m.groups[id] = g // loaded when this broker becomes the group's coordinator: the log is the truth
	return g
}

// lookupGroupLocked returns group id, loading it from the group
// coordinator's records when the manager does not hold it.
func (m *Manager) lookupGroupLocked(id string) *Group {
	if g := m.groups[id]; g != nil || m.members == nil {
		return g
	}
	if rs := m.members.ShareRecordsOf(id); rs != nil {
		return m.loadGroupLocked(id, rs)
	}
	return nil
}
