package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupDescribe handles StreamsGroupDescribe v0: the group's state,
// epochs, topology and members with their current and target assignments.
func (c *Coordinator) StreamsGroupDescribe(req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrStreamsGroupDescribeResponse()
	r.Version = req.Version
	for _, id := range req.Groups {
		dg := kmsg.NewStreamsGroupDescribeResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = -2147483648
		g := c.groups[id]
		switch {
		case c.notCoordinator(id):
			dg.ErrorCode = kerr.NotCoordinator.Code
		case !validGroupID(id):
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		case !g.isStreams():
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a streams group.")
		default:
			cg, st := g.consumer, g.consumer.streams
			dg.State = cg.stateName()
			if dg.State == "Stable" && len(st.status) > 0 {
				dg.State = "NotReady" // Kafka's state while topics are missing
			}
			dg.Epoch = cg.epoch
			dg.AssignmentEpoch = cg.assignmentEpoch
			topo := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: st.topologyEpoch}
			for _, s := range st.subtopologies {
				topo.Subtopologies = append(topo.Subtopologies, kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
					SubtopologyID:           s.SubtopologyID,
					SourceTopics:            append([]string{}, s.SourceTopics...),
					RepartitionSinkTopics:   append([]string{}, s.RepartitionSinkTopics...),
					StateChangelogTopics:    append([]kmsg.TopicInfo{}, s.StateChangelogTopics...),
					RepartitionSourceTopics: append([]kmsg.TopicInfo{}, s.RepartitionSourceTopics...),
				})
			}
			if topo.Subtopologies == nil {
				topo.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			}
			dg.Topology = topo
			ids := make([]string, 0, len(cg.members))
			for mid := range cg.members {
				ids = append(ids, mid)
			}
			sort.Strings(ids)
			for _, mid := range ids {
				m, info := cg.members[mid], st.members[mid]
				dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.InstanceID = m.id, m.epoch, m.instanceID
				dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
				if info != nil {
					dm.RackID, dm.TopologyEpoch, dm.ProcessID = info.rackID, info.topologyEpoch, info.processID
					if info.endpoint != nil {
						dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: info.endpoint.Host, Port: info.endpoint.Port}
					}
					for _, t := range info.clientTags {
						dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: t.Key, Value: t.Value})
					}
				}
				if dm.ClientTags == nil {
					dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
				}
				dm.TaskOffsets, dm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
				if info != nil {
					dm.TaskOffsets = append(dm.TaskOffsets, info.taskOffsets...)
					dm.TaskEndOffsets = append(dm.TaskEndOffsets, info.taskEndOffsets...)
				}
				dm.Assignment = streamsAssignment(st, m.assigned, st.standbyOf(m))
				dm.TargetAssignment = streamsAssignment(st, cg.target[m.id], st.standby[m.id])
				dg.Members = append(dg.Members, dm)
			}
			if dg.Members == nil {
				dg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
			}
			if req.Version >= 1 {
				describeTopologyDescription(st, req.IncludeTopologyDescription, &dg)
			}
		}
		r.Groups = append(r.Groups, dg)
	}
	return r
}

func streamsAssignment(st *streamsState, active, standby partitionSet) kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks = streamsTaskIDs(st, active)
	a.StandbyTasks, a.WarmupTasks = streamsTaskIDs(st, standby), []kmsg.TaskIDs{}
	return a
}
