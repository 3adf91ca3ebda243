package group

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tagged fields of Apache Kafka 4.4's streams-group records (group-coordinator's
// StreamsGroup*Value message specs), written as Kafka writes them (a tagged field only
// when it differs from its default, in tag order) and read back, so that a Kafka broker
// reads Sluice's records and Sluice reads Kafka's without losing a field:
//
//   - StreamsGroupMetadataValue: MetadataHash (not computed by Sluice: the value read
//     from the log is kept, else 0, which makes a Kafka coordinator that takes the group
//     over recompute the assignment once), ValidatedTopologyEpoch (tag 0: the topology
//     epoch when every topic of the topology is in place, else -1), LastAssignmentConfigs
//     (tag 1: num.standby.replicas and, when set, rack.aware.assignment.tags of the last
//     assignment, sorted by key, as Kafka), StoredDescriptionTopologyEpoch and
//     FailedDescriptionTopologyEpoch (tags 2 and 3: Kafka's topology description plugin;
//     Sluice keeps the values it read, else -1).
//   - StreamsGroupTargetAssignmentMetadataValue: AssignmentTimestamp (tag 0: when the
//     last assignment was computed, in ms; restored at load, so that the assignment
//     interval runs on after a restart).
//   - StreamsGroupCurrentMemberAssignmentValue: the AssignmentEpochs of the active tasks
//     and of the active tasks pending revocation (tag 0 of TaskIds: the member epoch at
//     which each partition was assigned to the member, Kafka's fence for zombie commits).

// streamsMetadataRecord is StreamsGroupMetadataValue v0.
type streamsMetadataRecord struct {
	epoch                  int32
	metadataHash           int64
	validatedTopologyEpoch int32
	lastAssignmentConfigs  [][2]string // nil: null
	storedDescriptionEpoch int32
	failedDescriptionEpoch int32
}

func newStreamsMetadataRecord(epoch int32) streamsMetadataRecord {
	return streamsMetadataRecord{epoch: epoch, validatedTopologyEpoch: -1, storedDescriptionEpoch: -1, failedDescriptionEpoch: -1}
}

// taggedField is one tagged field: its tag and encoded value.
type taggedField struct {
	tag  uint32
	data []byte
}

// appendTags writes a tagged-field section (fields in tag order).
func appendTags(b []byte, fs []taggedField) []byte {
	b = kbin.AppendUvarint(b, uint32(len(fs)))
	for _, f := range fs {
		b = kbin.AppendUvarint(b, f.tag)
		b = kbin.AppendUvarint(b, uint32(len(f.data)))
		b = append(b, f.data...)
	}
	return b
}

// readTags reads a tagged-field section, handing each field to fn; fn returns an
// error for a field it cannot read. Unknown tags are skipped.
func (r *valueReader) readTags(fn func(tag uint32, data []byte) error) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		tag := r.Uvarint()
		size := r.Uvarint()
		if size > uint32(len(r.Src)) {
			r.Span(-1) // marks the reader bad
			return
		}
		data := r.Span(int(size))
		if err := fn(tag, data); err != nil && r.err == nil {
			r.err = err
		}
	}
}

// finish checks that the value was read whole (its closing tagged fields read).
func (r *valueReader) finish(what string) error {
	if r.err != nil {
		return r.err
	}
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%s value: %w", what, err)
	}
	if len(r.Src) != 0 {
		return fmt.Errorf("%s value: %d trailing bytes", what, len(r.Src))
	}
	return nil
}

func tagInt32(v int32) []byte { return kbin.AppendInt32(nil, v) }

func readTagInt32(data []byte, what string) (int32, error) {
	r := kbin.Reader{Src: data}
	v := r.Int32()
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return 0, fmt.Errorf("%s: malformed tagged field", what)
	}
	return v, nil
}

// encodeStreamsMetadataValue encodes StreamsGroupMetadataValue v0.
func encodeStreamsMetadataValue(m streamsMetadataRecord) []byte {
	b := appendValueHeader()
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt64(b, m.metadataHash)
	var tags []taggedField
	if m.validatedTopologyEpoch != -1 {
		tags = append(tags, taggedField{0, tagInt32(m.validatedTopologyEpoch)})
	}
	if m.lastAssignmentConfigs != nil {
		c := kbin.AppendCompactArrayLen(nil, len(m.lastAssignmentConfigs))
		for _, kv := range m.lastAssignmentConfigs {
			c = kbin.AppendCompactString(c, kv[0])
			c = kbin.AppendCompactString(c, kv[1])
			c = appendNoTags(c)
		}
		tags = append(tags, taggedField{1, c})
	}
	if m.storedDescriptionEpoch != -1 {
		tags = append(tags, taggedField{2, tagInt32(m.storedDescriptionEpoch)})
	}
	if m.failedDescriptionEpoch != -1 {
		tags = append(tags, taggedField{3, tagInt32(m.failedDescriptionEpoch)})
	}
	return appendTags(b, tags)
}

func decodeStreamsMetadataValue(v []byte) (streamsMetadataRecord, error) {
	const what = "StreamsGroupMetadata"
	r := newValueReader(v, what)
	m := newStreamsMetadataRecord(r.Int32())
	m.metadataHash = r.Int64()
	r.readTags(func(tag uint32, data []byte) (err error) {
		switch tag {
		case 0:
			m.validatedTopologyEpoch, err = readTagInt32(data, what)
		case 1:
			cr := &valueReader{Reader: kbin.Reader{Src: data}}
			n := cr.CompactArrayLen()
			if n >= 0 {
				m.lastAssignmentConfigs = [][2]string{}
			}
			for i := int32(0); i < n && cr.Ok(); i++ {
				m.lastAssignmentConfigs = append(m.lastAssignmentConfigs, [2]string{cr.CompactString(), cr.CompactString()})
				cr.skipTags()
			}
			err = cr.finish(what + " LastAssignmentConfigs")
		case 2:
			m.storedDescriptionEpoch, err = readTagInt32(data, what)
		case 3:
			m.failedDescriptionEpoch, err = readTagInt32(data, what)
		}
		return err
	})
	return m, r.finish(what)
}

// streamsAssignmentConfigs are the LastAssignmentConfigs of an assignment with
// standbys standby replicas and rack-aware tags, as Kafka names them.
func streamsAssignmentConfigs(standbys int, tags []string) [][2]string {
	out := [][2]string{{"num.standby.replicas", strconv.Itoa(standbys)}}
	if len(tags) > 0 {
		out = append(out, [2]string{"rack.aware.assignment.tags", strings.Join(tags, ",")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// encodeStreamsTargetMetadataValue encodes StreamsGroupTargetAssignmentMetadataValue v0.
func encodeStreamsTargetMetadataValue(epoch int32, timestampMs int64) []byte {
	b := appendValueHeader()
	b = kbin.AppendInt32(b, epoch)
	var tags []taggedField
	if timestampMs != 0 {
		tags = append(tags, taggedField{0, kbin.AppendInt64(nil, timestampMs)})
	}
	return appendTags(b, tags)
}

func decodeStreamsTargetMetadataValue(v []byte) (epoch int32, timestampMs int64, err error) {
	const what = "StreamsGroupTargetAssignmentMetadata"
	r := newValueReader(v, what)
	epoch = r.Int32()
	r.readTags(func(tag uint32, data []byte) error {
		if tag != 0 {
			return nil
		}
		tr := kbin.Reader{Src: data}
		timestampMs = tr.Int64()
		if err := tr.Complete(); err != nil || len(tr.Src) != 0 {
			return fmt.Errorf("%s: malformed AssignmentTimestamp", what)
		}
		return nil
	})
	return epoch, timestampMs, r.finish(what)
}

// streamsEpochTasks are TaskIds with their AssignmentEpochs (one per partition;
// nil epochs: the tagged field is absent).
type streamsEpochTasks struct {
	tasks  streamsTasks
	epochs [][]int32 // per task, nil if absent
}

func appendStreamsEpochTasks(b []byte, ts streamsTasks, epochs [][]int32) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for i, t := range ts {
		b = kbin.AppendCompactString(b, t.SubtopologyID)
		b = kbin.AppendCompactArrayLen(b, len(t.Partitions))
		for _, p := range t.Partitions {
			b = kbin.AppendInt32(b, p)
		}
		var tags []taggedField
		if i < len(epochs) && epochs[i] != nil {
			e := kbin.AppendCompactArrayLen(nil, len(epochs[i]))
			for _, v := range epochs[i] {
				e = kbin.AppendInt32(e, v)
			}
			tags = append(tags, taggedField{0, e})
		}
		b = appendTags(b, tags)
	}
	return b
}

func (r *valueReader) streamsEpochTasks() streamsEpochTasks {
	n := r.arrayLen()
	var out streamsEpochTasks
	for i := 0; i < n && r.Ok(); i++ {
		t := kmsg.TaskIDs{SubtopologyID: r.CompactString()}
		np := r.arrayLen()
		for j := 0; j < np && r.Ok(); j++ {
			t.Partitions = append(t.Partitions, r.Int32())
		}
		var epochs []int32
		r.readTags(func(tag uint32, data []byte) error {
			if tag != 0 {
				return nil
			}
			er := &valueReader{Reader: kbin.Reader{Src: data}}
			ne := er.CompactArrayLen()
			if ne >= 0 {
				epochs = []int32{}
			}
			for k := int32(0); k < ne && er.Ok(); k++ {
				epochs = append(epochs, er.Int32())
			}
			return er.finish("AssignmentEpochs")
		})
		out.tasks = append(out.tasks, t)
		out.epochs = append(out.epochs, epochs)
	}
	return out
}

// streamsMetadataOf is the StreamsGroupMetadata record of cg.
func streamsMetadataOf(cg *consumerGroup) streamsMetadataRecord {
	st := cg.streams
	m := newStreamsMetadataRecord(cg.epoch)
	if l := st.loadedMeta; l != nil {
		m.metadataHash, m.storedDescriptionEpoch, m.failedDescriptionEpoch = l.metadataHash, l.storedDescriptionEpoch, l.failedDescriptionEpoch
	}
	if len(st.subtopologies) > 0 && len(st.status) == 0 {
		m.validatedTopologyEpoch = st.topologyEpoch
	}
	m.lastAssignmentConfigs = streamsAssignmentConfigs(st.numStandbys, st.rackTags)
	return m
}

// restoreStreamsMetadata takes back, at load, what the group's records say of its
// last assignment: its configs (so that a change made while the coordinator was away
// assigns again at the next heartbeat, as in Kafka) and its time.
func restoreStreamsMetadata(st *streamsState, sr *streamsReplay) {
	meta := sr.meta
	st.loadedMeta = &meta
	for _, kv := range meta.lastAssignmentConfigs {
		switch kv[0] {
		case "num.standby.replicas":
			if n, err := strconv.Atoi(kv[1]); err == nil && n >= 0 {
				st.numStandbys = n
			}
		case "rack.aware.assignment.tags":
			st.rackTags = splitTags(kv[1])
		}
	}
	if meta.lastAssignmentConfigs != nil && !slicesHasKey(meta.lastAssignmentConfigs, "rack.aware.assignment.tags") {
		st.rackTags = nil
	}
	if sr.assignedAtMs > 0 {
		st.assignedAt = time.UnixMilli(sr.assignedAtMs)
	}
}

func slicesHasKey(kvs [][2]string, key string) bool {
	for _, kv := range kvs {
		if kv[0] == key {
			return true
		}
	}
	return false
}

// streamsAssignmentEpochs brings the assignment epochs of member id's active tasks up
// to date (a task new to the member gets its current epoch, tasks it no longer holds
// are forgotten) and returns them.
func streamsAssignmentEpochs(st *streamsState, id string, m *consumerMember) map[tpID]int32 {
	info := st.members[id]
	if info == nil {
		info = &streamsMemberInfo{}
	}
	if info.activeEpochs == nil {
		info.activeEpochs = make(map[tpID]int32)
	}
	for p := range info.activeEpochs {
		if !m.assigned[p] && !m.revoking[p] {
			delete(info.activeEpochs, p)
		}
	}
	for _, set := range []partitionSet{m.assigned, m.revoking} {
		for p := range set {
			if _, ok := info.activeEpochs[p]; !ok {
				info.activeEpochs[p] = m.epoch
			}
		}
	}
	return info.activeEpochs
}

// taskEpochs lists the assignment epochs of tasks, one per partition.
func taskEpochs(st *streamsState, tasks []kmsg.TaskIDs, epochs map[tpID]int32) [][]int32 {
	out := make([][]int32, len(tasks))
	for i, t := range tasks {
		idx, ok := st.subIndex[t.SubtopologyID]
		e := make([]int32, len(t.Partitions))
		for j, p := range t.Partitions {
			if ok {
				e[j] = epochs[tpID{taskKey(idx), p}]
			}
		}
		out[i] = e
	}
	return out
}

// loadAssignmentEpochs reads back a member's assignment epochs from its current
// assignment record.
func loadAssignmentEpochs(st *streamsState, cur streamsCurrentRecord) map[tpID]int32 {
	out := make(map[tpID]int32)
	add := func(tasks streamsTasks, epochs [][]int32) {
		for i, t := range tasks {
			idx, ok := st.subIndex[t.SubtopologyID]
			if !ok || i >= len(epochs) || len(epochs[i]) != len(t.Partitions) {
				continue
			}
			for j, p := range t.Partitions {
				out[tpID{taskKey(idx), p}] = epochs[i][j]
			}
		}
	}
	add(cur.active, cur.activeEpochs)
	add(cur.revoking, cur.revokingEpochs)
	return out
}
