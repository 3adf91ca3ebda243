package group

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Durable streams groups (KIP-1071). A streams group is written to __consumer_offsets
// as Apache Kafka 4.x writes it (group-coordinator's StreamsGroup*Key/Value message
// specs): a group-epoch record (StreamsGroupMetadata, type 17), the topology
// (StreamsGroupTopology, 23), the target-assignment epoch
// (StreamsGroupTargetAssignmentMetadata, 20) and, per member, its metadata
// (StreamsGroupMemberMetadata, 19: process, endpoint, client tags, topology epoch),
// its target assignment (StreamsGroupTargetAssignmentMember, 21: active and standby
// tasks) and its current assignment (StreamsGroupCurrentMemberAssignment, 22: epochs,
// state, tasks and active tasks pending revocation). Tasks are named by subtopology id.
// The records go through the consumer group's diff-and-write path
// (consumer_persist.go): only records whose value changed are written, keys that
// disappear are tombstoned, members' records before the group's.
//
// On replay the records of a group are collected (streamsReplay) and the group is
// built once its partition is read (finishStreamsLoad): its epochs, topology, target
// and current assignments come back, so that members that heartbeat within their
// session timeout keep their epoch and tasks.
const (
	keyTypeStreamsGroupMetadata       int16 = 17
	keyTypeStreamsGroupMemberMetadata int16 = 19
	keyTypeStreamsGroupTargetMetadata int16 = 20
	keyTypeStreamsGroupTargetMember   int16 = 21
	keyTypeStreamsGroupCurrentMember  int16 = 22
	keyTypeStreamsGroupTopology       int16 = 23
)

func isStreamsKeyType(t int16) bool {
	return t == keyTypeStreamsGroupMetadata || t == keyTypeStreamsTopologyDescription || (t >= keyTypeStreamsGroupMemberMetadata && t <= keyTypeStreamsGroupTopology)
}

func streamsKeyHasMember(t int16) bool {
	return t == keyTypeStreamsGroupMemberMetadata || t == keyTypeStreamsGroupTargetMember || t == keyTypeStreamsGroupCurrentMember
}

func encodeStreamsKey(t int16, group, member string) []byte {
	b := kbin.AppendInt16(nil, t)
	b = kbin.AppendString(b, group)
	if streamsKeyHasMember(t) {
		b = kbin.AppendString(b, member)
	}
	return b
}

func decodeStreamsKey(b []byte) (t int16, group, member string, err error) {
	r := kbin.Reader{Src: b}
	t = r.Int16()
	if !isStreamsKeyType(t) {
		return t, "", "", fmt.Errorf("record type %d is not a streams-group record", t)
	}
	group = r.String()
	if streamsKeyHasMember(t) {
		member = r.String()
	}
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return t, "", "", fmt.Errorf("streams-group key type %d: malformed", t)
	}
	return t, group, member, nil
}

// streamsTasks is a list of TaskIds: subtopology id and partitions.
type streamsTasks []kmsg.TaskIDs

func appendStreamsTasks(b []byte, ts streamsTasks) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for _, t := range ts {
		b = kbin.AppendCompactString(b, t.SubtopologyID)
		b = kbin.AppendCompactArrayLen(b, len(t.Partitions))
		for _, p := range t.Partitions {
			b = kbin.AppendInt32(b, p)
		}
		b = appendNoTags(b)
	}
	return b
}

func (r *valueReader) streamsTasks() streamsTasks {
	n := r.arrayLen()
	var out streamsTasks
	for i := 0; i < n && r.Ok(); i++ {
		t := kmsg.TaskIDs{SubtopologyID: r.CompactString()}
		np := r.arrayLen()
		for j := 0; j < np && r.Ok(); j++ {
			t.Partitions = append(t.Partitions, r.Int32())
		}
		r.skipTags()
		out = append(out, t)
	}
	return out
}

func appendStrings(b []byte, ss []string) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ss))
	for _, s := range ss {
		b = kbin.AppendCompactString(b, s)
	}
	return b
}

func (r *valueReader) strings() []string {
	n := r.arrayLen()
	out := []string{}
	for i := 0; i < n && r.Ok(); i++ {
		out = append(out, r.CompactString())
	}
	return out
}

func appendInt16s(b []byte, vs []int16) []byte {
	b = kbin.AppendCompactArrayLen(b, len(vs))
	for _, v := range vs {
		b = kbin.AppendInt16(b, v)
	}
	return b
}

func (r *valueReader) int16s() []int16 {
	n := r.arrayLen()
	out := []int16{}
	for i := 0; i < n && r.Ok(); i++ {
		out = append(out, r.Int16())
	}
	return out
}

func appendTopicInfos(b []byte, ts []kmsg.TopicInfo) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for _, t := range ts {
		b = kbin.AppendCompactString(b, t.Topic)
		b = kbin.AppendInt32(b, t.NumPartitions)
		b = kbin.AppendInt16(b, t.ReplicationFactor)
		b = kbin.AppendCompactArrayLen(b, len(t.Configs))
		for _, c := range t.Configs {
			b = kbin.AppendCompactString(b, c.Key)
			b = kbin.AppendCompactString(b, c.Value)
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return b
}

func (r *valueReader) topicInfos() []kmsg.TopicInfo {
	n := r.arrayLen()
	out := []kmsg.TopicInfo{}
	for i := 0; i < n && r.Ok(); i++ {
		t := kmsg.TopicInfo{Topic: r.CompactString(), NumPartitions: r.Int32(), ReplicationFactor: r.Int16()}
		nc := r.arrayLen()
		for j := 0; j < nc && r.Ok(); j++ {
			t.Configs = append(t.Configs, kmsg.TopicInfoConfig{Key: r.CompactString(), Value: r.CompactString()})
			r.skipTags()
		}
		r.skipTags()
		out = append(out, t)
	}
	return out
}

// encodeStreamsTopologyValue encodes StreamsGroupTopologyValue v0.
func encodeStreamsTopologyValue(epoch int32, subs []StreamsSubtopology) []byte {
	b := appendValueHeader()
	b = kbin.AppendInt32(b, epoch)
	b = kbin.AppendCompactArrayLen(b, len(subs))
	for _, s := range subs {
		b = kbin.AppendCompactString(b, s.SubtopologyID)
		b = appendStrings(b, s.SourceTopics)
		b = appendStrings(b, s.SourceTopicRegex)
		b = appendTopicInfos(b, s.StateChangelogTopics)
		b = appendStrings(b, s.RepartitionSinkTopics)
		b = appendTopicInfos(b, s.RepartitionSourceTopics)
		b = kbin.AppendCompactArrayLen(b, len(s.CopartitionGroups))
		for _, g := range s.CopartitionGroups {
			b = appendInt16s(b, g.SourceTopics)
			b = appendInt16s(b, g.SourceTopicRegex)
			b = appendInt16s(b, g.RepartitionSourceTopics)
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func decodeStreamsTopologyValue(v []byte) (int32, []StreamsSubtopology, error) {
	r := newValueReader(v, "StreamsGroupTopology")
	epoch := r.Int32()
	n := r.arrayLen()
	var subs []StreamsSubtopology
	for i := 0; i < n && r.Ok(); i++ {
		s := StreamsSubtopology{SubtopologyID: r.CompactString()}
		s.SourceTopics = r.strings()
		s.SourceTopicRegex = r.strings()
		s.StateChangelogTopics = r.topicInfos()
		s.RepartitionSinkTopics = r.strings()
		s.RepartitionSourceTopics = r.topicInfos()
		ng := r.arrayLen()
		for j := 0; j < ng && r.Ok(); j++ {
			g := kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
				SourceTopics: r.int16s(), SourceTopicRegex: r.int16s(), RepartitionSourceTopics: r.int16s(),
			}
			r.skipTags()
			s.CopartitionGroups = append(s.CopartitionGroups, g)
		}
		r.skipTags()
		subs = append(subs, s)
	}
	return epoch, subs, r.done("StreamsGroupTopology")
}

// streamsMemberRecord is StreamsGroupMemberMetadataValue v0.
type streamsMemberRecord struct {
	instanceID, rackID   *string
	clientID, clientHost string
	rebalanceTimeoutMs   int32
	topologyEpoch        int32
	processID            string
	endpoint             *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags           []kmsg.StreamsGroupHeartbeatRequestClientTag
}

func encodeStreamsMemberValue(m streamsMemberRecord) []byte {
	b := appendValueHeader()
	b = kbin.AppendCompactNullableString(b, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendInt32(b, m.rebalanceTimeoutMs)
	b = kbin.AppendInt32(b, m.topologyEpoch)
	b = kbin.AppendCompactString(b, m.processID)
	if m.endpoint == nil { // a nullable struct: -1 null, 1 present
		b = kbin.AppendInt8(b, -1)
	} else {
		b = kbin.AppendInt8(b, 1)
		b = kbin.AppendCompactString(b, m.endpoint.Host)
		b = kbin.AppendUint16(b, m.endpoint.Port)
		b = appendNoTags(b)
	}
	b = kbin.AppendCompactArrayLen(b, len(m.clientTags))
	for _, t := range m.clientTags {
		b = kbin.AppendCompactString(b, t.Key)
		b = kbin.AppendCompactString(b, t.Value)
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func decodeStreamsMemberValue(v []byte) (streamsMemberRecord, error) {
	r := newValueReader(v, "StreamsGroupMemberMetadata")
	var m streamsMemberRecord
	m.instanceID = r.CompactNullableString()
	m.rackID = r.CompactNullableString()
	m.clientID = r.CompactString()
	m.clientHost = r.CompactString()
	m.rebalanceTimeoutMs = r.Int32()
	m.topologyEpoch = r.Int32()
	m.processID = r.CompactString()
	if r.Int8() >= 0 {
		m.endpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: r.CompactString(), Port: r.Uint16()}
		r.skipTags()
	}
	n := r.arrayLen()
	for i := 0; i < n && r.Ok(); i++ {
		m.clientTags = append(m.clientTags, kmsg.StreamsGroupHeartbeatRequestClientTag{Key: r.CompactString(), Value: r.CompactString()})
		r.skipTags()
	}
	return m, r.done("StreamsGroupMemberMetadata")
}

// encodeStreamsTargetValue encodes StreamsGroupTargetAssignmentMemberValue v0.
func encodeStreamsTargetValue(active, standby streamsTasks) []byte {
	b := appendValueHeader()
	b = appendStreamsTasks(b, active)
	b = appendStreamsTasks(b, standby)
	b = appendStreamsTasks(b, nil) // warm-up tasks
	return appendNoTags(b)
}

func decodeStreamsTargetValue(v []byte) (active, standby streamsTasks, err error) {
	r := newValueReader(v, "StreamsGroupTargetAssignmentMember")
	active, standby = r.streamsTasks(), r.streamsTasks()
	r.streamsTasks()
	return active, standby, r.done("StreamsGroupTargetAssignmentMember")
}

// streamsCurrentRecord is StreamsGroupCurrentMemberAssignmentValue v0; the active
// tasks (and those pending revocation) carry their assignment epochs
// (streams_records_tags.go).
type streamsCurrentRecord struct {
	epoch, prevEpoch int32
	state            int8
	active, standby  streamsTasks
	revoking         streamsTasks
	activeEpochs     [][]int32 // per task of active: an epoch per partition (nil: absent)
	revokingEpochs   [][]int32 // per task of revoking
}

func encodeStreamsCurrentValue(c streamsCurrentRecord) []byte {
	b := appendValueHeader()
	b = kbin.AppendInt32(b, c.epoch)
	b = kbin.AppendInt32(b, c.prevEpoch)
	b = kbin.AppendInt8(b, c.state)
	b = appendStreamsEpochTasks(b, c.active, c.activeEpochs)
	b = appendStreamsTasks(b, c.standby)
	b = appendStreamsTasks(b, nil)
	b = appendStreamsEpochTasks(b, c.revoking, c.revokingEpochs)
	b = appendStreamsTasks(b, nil)
	b = appendStreamsTasks(b, nil)
	return appendNoTags(b)
}

func decodeStreamsCurrentValue(v []byte) (streamsCurrentRecord, error) {
	r := newValueReader(v, "StreamsGroupCurrentMemberAssignment")
	var c streamsCurrentRecord
	c.epoch, c.prevEpoch, c.state = r.Int32(), r.Int32(), r.Int8()
	a := r.streamsEpochTasks()
	c.active, c.activeEpochs = a.tasks, a.epochs
	c.standby = r.streamsTasks()
	r.streamsTasks()
	rv := r.streamsEpochTasks()
	c.revoking, c.revokingEpochs = rv.tasks, rv.epochs
	r.streamsTasks()
	r.streamsTasks()
	return c, r.done("StreamsGroupCurrentMemberAssignment")
}

// streamsRecords encodes the records g's streams group should have in the log.
func streamsRecords(g *group) []record {
	cg := g.consumer
	st := cg.streams
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	key := func(t int16, member string) []byte { return encodeStreamsKey(t, g.id, member) }
	recs := make([]record, 0, 3+3*len(ids))
	for _, id := range ids {
		m := cg.members[id]
		info := st.members[id]
		if info == nil {
			info = &streamsMemberInfo{}
		}
		recs = append(recs, record{key(keyTypeStreamsGroupMemberMetadata, id), encodeStreamsMemberValue(streamsMemberRecord{
			instanceID: m.instanceID, rackID: info.rackID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeoutMs: ms(m.rebalanceTimeout), topologyEpoch: info.topologyEpoch, processID: info.processID,
			endpoint: info.endpoint, clientTags: info.clientTags,
		})})
	}
	recs = append(recs, record{key(keyTypeStreamsGroupTopology, ""), encodeStreamsTopologyValue(st.topologyEpoch, st.subtopologies)})
	if st.desc != nil && st.desc.desc != nil {
		recs = append(recs, record{key(keyTypeStreamsTopologyDescription, ""), encodeStreamsTopologyDescriptionValue(st.desc)})
	}
	recs = append(recs, record{key(keyTypeStreamsGroupMetadata, ""), encodeStreamsMetadataValue(streamsMetadataOf(cg))})
	for _, id := range ids {
		recs = append(recs, record{key(keyTypeStreamsGroupTargetMember, id),
			encodeStreamsTargetValue(streamsTaskIDs(st, cg.target[id]), streamsTaskIDs(st, st.standby[id]))})
	}
	var assignedAtMs int64
	if !st.assignedAt.IsZero() {
		assignedAtMs = st.assignedAt.UnixMilli()
	}
	recs = append(recs, record{key(keyTypeStreamsGroupTargetMetadata, ""), encodeStreamsTargetMetadataValue(cg.assignmentEpoch, assignedAtMs)})
	for _, id := range ids {
		m := cg.members[id]
		var standby partitionSet
		if info := st.members[id]; info != nil {
			standby = info.standbySent
		}
		active, revoking := streamsTaskIDs(st, m.assigned), streamsTaskIDs(st, m.revoking)
		epochs := streamsAssignmentEpochs(st, id, m) // streams_records_tags.go
		recs = append(recs, record{key(keyTypeStreamsGroupCurrentMember, id), encodeStreamsCurrentValue(streamsCurrentRecord{
			epoch: m.epoch, prevEpoch: m.prevEpoch, state: int8(m.state),
			active: active, standby: streamsTaskIDs(st, standby), revoking: revoking,
			activeEpochs: taskEpochs(st, active, epochs), revokingEpochs: taskEpochs(st, revoking, epochs),
		})})
	}
	return recs
}

// streamsReplay collects a streams group's records during a replay.
type streamsReplay struct {
	epoch, assignmentEpoch int32
	meta                   streamsMetadataRecord
	assignedAtMs           int64
	topologyEpoch          int32
	subtopologies          []StreamsSubtopology
	desc                   *streamsTopologyDescription
	hasGroup               bool
	members                map[string]streamsMemberRecord
	targets                map[string][2]streamsTasks
	current                map[string]streamsCurrentRecord
}

// replayStreamsRecord applies one streams-group record (key types 17, 19..23).
func (c *Coordinator) replayStreamsRecord(key, value []byte) {
	t, gid, member, err := decodeStreamsKey(key)
	if err != nil {
		c.log.Warn("group: skipping unreadable streams-group record key", "err", err)
		return
	}
	g := c.groups[gid]
	if value == nil {
		if g == nil || g.streamsLoad == nil {
			return
		}
		g.setConsumerRecord(string(key), nil)
		sr := g.streamsLoad
		switch t {
		case keyTypeStreamsGroupMetadata: // the group was deleted
			g.streamsLoad = nil
		case keyTypeStreamsGroupMemberMetadata:
			delete(sr.members, member)
		case keyTypeStreamsGroupTargetMember:
			delete(sr.targets, member)
		case keyTypeStreamsGroupCurrentMember:
			delete(sr.current, member)
		case keyTypeStreamsGroupTopology:
			sr.subtopologies, sr.topologyEpoch = nil, 0
		case keyTypeStreamsTopologyDescription:
			sr.desc = nil
		}
		return
	}
	if g == nil {
		g = newGroup(gid, c.clock.Now())
		c.groups[gid] = g
	}
	if g.streamsLoad == nil {
		g.streamsLoad = &streamsReplay{members: map[string]streamsMemberRecord{}, targets: map[string][2]streamsTasks{}, current: map[string]streamsCurrentRecord{}}
	}
	sr := g.streamsLoad
	switch t {
	case keyTypeStreamsGroupMetadata:
		sr.meta, err = decodeStreamsMetadataValue(value)
		sr.epoch, sr.hasGroup = sr.meta.epoch, err == nil
	case keyTypeStreamsGroupTargetMetadata:
		sr.assignmentEpoch, sr.assignedAtMs, err = decodeStreamsTargetMetadataValue(value)
	case keyTypeStreamsGroupTopology:
		sr.topologyEpoch, sr.subtopologies, err = decodeStreamsTopologyValue(value)
	case keyTypeStreamsTopologyDescription:
		sr.desc, err = decodeStreamsTopologyDescriptionValue(value)
	case keyTypeStreamsGroupMemberMetadata:
		var m streamsMemberRecord
		if m, err = decodeStreamsMemberValue(value); err == nil {
			sr.members[member] = m
		}
	case keyTypeStreamsGroupTargetMember:
		var a, s streamsTasks
		if a, s, err = decodeStreamsTargetValue(value); err == nil {
			sr.targets[member] = [2]streamsTasks{a, s}
		}
	case keyTypeStreamsGroupCurrentMember:
		var cur streamsCurrentRecord
		if cur, err = decodeStreamsCurrentValue(value); err == nil {
			sr.current[member] = cur
		}
	}
	if err != nil {
		c.log.Warn("group: skipping unreadable streams-group record", "group", gid, "type", t, "err", err)
		return
	}
	g.setConsumerRecord(string(key), append([]byte(nil), value...))
}

// finishStreamsLoad builds a replayed streams group from its records and arms its
// members' session timers.
func (c *Coordinator) finishStreamsLoad(g *group) {
	sr := g.streamsLoad
	g.streamsLoad = nil
	if sr == nil || !sr.hasGroup {
		return
	}
	now := c.clock.Now()
	if g.consumer == nil {
		g.stopTimers()
		g.members = make(map[string]*member)
		g.static = make(map[string]string)
		g.protocol, g.leader = "", ""
		g.transition(stateEmpty, now)
	}
	cg := newConsumerGroup(now)
	g.consumer = cg
	g.protocolType = "streams"
	st := &streamsState{members: map[string]*streamsMemberInfo{}, standby: map[string]partitionSet{}}
	cg.streams = st
	st.topologyEpoch, st.subtopologies, st.desc = sr.topologyEpoch, sr.subtopologies, sr.desc
	st.subIndex = make(map[string]int, len(st.subtopologies))
	for i, s := range st.subtopologies {
		st.subIndex[s.SubtopologyID] = i
	}
	tasks := func(ts streamsTasks) partitionSet {
		out := make(partitionSet)
		for _, t := range ts {
			i, ok := st.subIndex[t.SubtopologyID]
			if !ok {
				continue
			}
			for _, p := range t.Partitions {
				out[tpID{taskKey(i), p}] = true
			}
		}
		return out
	}
	cg.epoch, cg.assignmentEpoch = sr.epoch, sr.assignmentEpoch
	ids := make([]string, 0, len(sr.members))
	for id := range sr.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		mr := sr.members[id]
		m := &consumerMember{id: id, instanceID: mr.instanceID, rackID: mr.rackID, clientID: mr.clientID, clientHost: mr.clientHost,
			rebalanceTimeout: time.Duration(mr.rebalanceTimeoutMs) * time.Millisecond, assigned: make(partitionSet), state: memberStable}
		info := &streamsMemberInfo{processID: mr.processID, topologyEpoch: mr.topologyEpoch, endpoint: mr.endpoint,
			clientTags: mr.clientTags, rackID: mr.rackID}
		if cur, ok := sr.current[id]; ok {
			m.epoch, m.prevEpoch = cur.epoch, cur.prevEpoch
			m.assigned = tasks(cur.active)
			if len(cur.revoking) > 0 {
				m.revoking = tasks(cur.revoking)
				m.state = memberUnrevoked
			} else if reconcileState(cur.state) == memberUnreleased {
				m.state = memberUnreleased
			}
			info.standbySent = tasks(cur.standby)
			info.activeEpochs = loadAssignmentEpochs(st, cur) // streams_records_tags.go
		}
		if tg, ok := sr.targets[id]; ok {
			cg.target[id] = tasks(tg[0])
			st.standby[id] = tasks(tg[1])
		}
		cg.members[id] = m
		st.members[id] = info
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		for p := range m.assigned {
			cg.owner[p] = id
		}
		for p := range m.revoking {
			cg.owner[p] = id
		}
		if info.endpoint != nil {
			st.endpointEpoch = max(st.endpointEpoch, 1)
		}
	}
	// The records of members without metadata are dropped at the next write.
	cg.metaSig = c.refreshStreamsTopology(st)
	gcfg := c.streamsConfig(g.id)
	st.numStandbys, st.rackTags = gcfg.standbys, gcfg.rackTags
	restoreStreamsMetadata(st, sr) // streams_records_tags.go: the last assignment's configs and time
	cg.emptySince = now
	for _, id := range ids {
		c.scheduleStreamsSession(g, cg.members[id])
	}
	c.log.Debug("group: loaded streams group", "group", g.id, "epoch", cg.epoch, "members", len(ids))
}
