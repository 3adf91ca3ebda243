package group

import "github.com/twmb/franz-go/pkg/kmsg"

// Task offsets of streams group members (KIP-1071), as Kafka 4.4 keeps them:
// a member reports, for the tasks whose state it holds locally, the sum of
// its changelog offsets (TaskOffsets) and of the changelogs' end offsets
// (TaskEndOffsets) when it joins, when they changed and at least every
// streams.task.offset.interval.ms. The coordinator keeps each member's last
// report in memory (a list left null keeps the previous one; not written to
// __consumer_offsets, as Kafka: members report again after a coordinator
// move), StreamsGroupDescribe returns them per member (kafka-streams-groups
// --describe --members --verbose shows the lag), and the assignor uses them
// as Kafka's sticky assignor does: a stateful task's standby goes first to the
// member that already had it as a standby, then to the member that reported
// the most of its state (the highest offset sum).

// updateTaskOffsets keeps the offsets a heartbeat reports.
func (info *streamsMemberInfo) updateTaskOffsets(req *kmsg.StreamsGroupHeartbeatRequest) {
	if req.TaskOffsets != nil {
		info.taskOffsets = append([]kmsg.TaskOffset(nil), req.TaskOffsets...)
	}
	if req.TaskEndOffsets != nil {
		info.taskEndOffsets = append([]kmsg.TaskOffset(nil), req.TaskEndOffsets...)
	}
}

// reportedOffset is the offset sum member id last reported for task t (-1
// if none).
func (st *streamsState) reportedOffset(id string, t tpID) int64 {
	info := st.members[id]
	if info == nil {
		return -1
	}
	for _, o := range info.taskOffsets {
		if i, ok := st.subIndex[o.SubtopologyID]; ok && taskKey(i) == t.id && o.Partition == t.p {
			return o.Offset
		}
	}
	return -1
}
