package group

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams groups (KIP-1071, the Kafka Streams rebalance protocol). A streams
// group is a consumerGroup whose "partitions" are tasks: a task is
// (subtopology, partition), stored under taskKey(subtopology index), so the
// target assignment, the owners and the revoke-before-assign reconciliation
// are the consumer group's. What is specific lives in streamsState: the
// topology (set by the first member and replaced by a newer topology epoch),
// its resolution against the topics (task counts, internal topics, missing
// source topics, reported as statuses), each member's process, endpoint and
// tags. Standby replicas of stateful tasks (streams.num.standby.replicas, streams_configs.go)
// go to members of other processes than the task's active owner; they need
// no hand-over, so a member gets its standby tasks at once (except a task it
// still owns as active). Streams groups are written to __consumer_offsets in
// Kafka's records (streams_persist.go), so that a coordinator restart or move
// keeps their epochs, topology and assignments.

// Status codes of StreamsGroupHeartbeat.
const (
	streamsStaleTopology         = 0
	streamsMissingSourceTopics   = 1
	streamsIncorrectPartitions   = 2
	streamsMissingInternalTopics = 3
	streamsShutdownApplication   = 4
)

type streamsState struct {
	topologyEpoch int32
	subtopologies []StreamsSubtopology
	subIndex      map[string]int
	tasks         map[string]int32 // resolved task count per subtopology
	status        []kmsg.StreamsGroupHeartbeatResponseStatus
	shutdown      bool
	members       map[string]*streamsMemberInfo
	endpointEpoch int32
	standby       map[string]partitionSet     // target standby tasks by member
	numStandbys   int                         // standby replicas per stateful task at the last assignment
	desc          *streamsTopologyDescription // KIP-1331 (streams_topology_description.go)
	// streams_assignment_configs.go
	initialTimer Timer     // the initial rebalance delay is running
	assignedAt   time.Time // the last assignment
	rackTags     []string  // the rack-aware tags of the last assignment
	// the StreamsGroupMetadata fields Sluice does not compute, as read from the log
	// (streams_records_tags.go)
	loadedMeta *streamsMetadataRecord
}

type streamsMemberInfo struct {
	processID     string
	topologyEpoch int32
	endpoint      *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags    []kmsg.StreamsGroupHeartbeatRequestClientTag
	rackID        *string
	standbySent   partitionSet // the standby tasks last sent to the member
	// the changelog offset sums of its tasks' local state the member last
	// reported, and their end offsets (streams_task_offsets.go)
	taskOffsets, taskEndOffsets []kmsg.TaskOffset
	// the member epoch at which each active task (partition) was assigned to it
	// (streams_records_tags.go)
	activeEpochs map[tpID]int32
}

// isStreams reports whether g is a streams group.
func (g *group) isStreams() bool { return g.consumer != nil && g.consumer.streams != nil }

// StreamsTopology returns the topology of streams group id (nil if none):
// the broker resolves it to create the internal topics before a heartbeat.
func (c *Coordinator) StreamsTopology(id string) []StreamsSubtopology {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[id]; g != nil && g.isStreams() {
		return g.consumer.streams.subtopologies
	}
	return nil
}

// StreamsGroupHeartbeat handles StreamsGroupHeartbeat v0: join (epoch 0, with
// the topology), heartbeat and acknowledge (epoch > 0, with the tasks the
// member owns when they changed), leave (-1) and static leave (-2).
func (c *Coordinator) StreamsGroupHeartbeat(cl Client, req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = req.Version
	if code, msg := c.streamsHeartbeat(cl, req, r); code != 0 {
		r.ErrorCode = code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks, r.Status = nil, nil, nil, nil
	}
	return r
}

func (c *Coordinator) validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, joined bool) (int16, string) {
	bad := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.MemberID == "":
		return bad("MemberId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case req.MemberEpoch < epochStaticLeave:
		return bad("MemberEpoch is invalid.")
	}
	if req.MemberEpoch == 0 && !joined {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return bad("RebalanceTimeoutMs must be provided in first request.")
		case req.Topology == nil:
			return bad("Topology must be non-null when joining the group.")
		case req.ProcessID == nil || *req.ProcessID == "":
			return bad("ProcessId must be provided in first request.")
		case len(req.ActiveTasks) > 0 || len(req.StandbyTasks) > 0 || len(req.WarmupTasks) > 0:
			return bad("ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.")
		}
		seen := map[string]bool{}
		for _, s := range req.Topology.Subtopologies {
			if s.SubtopologyID == "" || seen[s.SubtopologyID] {
				return kerr.StreamsInvalidTopology.Code, "Subtopology ids must be non-empty and unique."
			}
			seen[s.SubtopologyID] = true
			if len(s.SourceTopics) == 0 && len(s.SourceTopicRegex) == 0 && len(s.RepartitionSourceTopics) == 0 {
				return kerr.StreamsInvalidTopology.Code, "Subtopology " + s.SubtopologyID + " has no source topics."
			}
		}
	} else if req.Topology != nil {
		return bad("Topology can only be provided when (re-)joining.")
	}
	return 0, ""
}

func (c *Coordinator) streamsHeartbeat(cl Client, req *kmsg.StreamsGroupHeartbeatRequest, r *kmsg.StreamsGroupHeartbeatResponse) (int16, string) {
	if c.notCoordinator(req.Group) {
		return kerr.NotCoordinator.Code, ""
	}
	// A member whose join was answered with epoch 0 (its group's first
	// assignment is delayed, streams_assignment_configs.go) may heartbeat at
	// epoch 0 without its topology.
	joined := false
	if g := c.groups[req.Group]; req.MemberEpoch == 0 && req.Topology == nil && g != nil && g.isStreams() {
		if m := g.consumer.members[req.MemberID]; m != nil && m.epoch == 0 {
			joined = true
		}
	}
	if code, msg := c.validateStreamsHeartbeat(req, joined); code != 0 {
		return code, msg
	}
	now := c.clock.Now()
	g := c.groups[req.Group]
	if req.MemberEpoch == epochLeave || req.MemberEpoch == epochStaticLeave {
		if g == nil || !g.isStreams() {
			return kerr.UnknownMemberID.Code, "Group " + req.Group + " not found."
		}
		return c.streamsLeave(g, req, r)
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return kerr.UnknownMemberID.Code, "Group " + req.Group + " not found."
		}
		g = newGroup(req.Group, now)
		c.groups[req.Group] = g
	}
	if !g.isStreams() {
		if !g.isEmpty() || (g.consumer == nil && g.state != stateEmpty) {
			return kerr.GroupIDNotFound.Code, "Group " + req.Group + " is not a streams group."
		}
		if req.MemberEpoch != 0 {
			return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + req.Group + "."
		}
		if g.consumer != nil {
			c.convertToClassic(g)
		}
		c.convertToConsumer(g)
		g.protocolType = "streams"
		g.consumer.streams = &streamsState{members: map[string]*streamsMemberInfo{}}
	}
	cg, st := g.consumer, g.consumer.streams

	m := cg.members[req.MemberID]
	if req.InstanceID != nil {
		curID, has := cg.static[*req.InstanceID]
		switch {
		case req.MemberEpoch == 0 && has && curID != req.MemberID:
			old := cg.members[curID]
			if old.epoch != epochStaticLeave {
				return kerr.UnreleasedInstanceID.Code, "Static member " + *req.InstanceID + " is still in use."
			}
			info := st.members[curID]
			delete(st.members, curID)
			m = c.takeOverStatic(cg, old, req.MemberID)
			st.members[req.MemberID] = info
		case req.MemberEpoch != 0 && has && curID != req.MemberID:
			return kerr.FencedInstanceID.Code, "Instance " + *req.InstanceID + " belongs to another member."
		}
	}
	if m == nil && req.MemberEpoch != 0 {
		return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + req.Group + "."
	}
	owned := streamsOwned(st, req.ActiveTasks)
	isNew := m == nil
	firstJoin := isNew && len(cg.members) == 0
	if isNew {
		if len(cg.members) >= c.cfg.MaxGroupSize {
			return kerr.GroupMaxSizeReached.Code, ""
		}
		m = &consumerMember{id: req.MemberID, instanceID: req.InstanceID, assigned: make(partitionSet)}
	} else if req.MemberEpoch != 0 {
		if code := m.checkEpoch(req.MemberEpoch, owned); code != 0 {
			return code, fmt.Sprintf("The member epoch %d is not the expected epoch %d.", req.MemberEpoch, m.epoch)
		}
	}
	before := clonePartitions(m.assigned)
	beforeEpoch := m.epoch
	m.clientID, m.clientHost = cl.ID, cl.Host
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	changed := isNew
	info := st.members[req.MemberID]
	if info == nil {
		info = &streamsMemberInfo{}
	}
	if req.ProcessID != nil {
		info.processID = *req.ProcessID
	}
	if req.RackID != nil {
		info.rackID = req.RackID
	}
	if req.ClientTags != nil {
		info.clientTags = req.ClientTags
	}
	info.updateTaskOffsets(req) // streams_task_offsets.go
	if req.UserEndpoint != nil && (info.endpoint == nil || info.endpoint.Host != req.UserEndpoint.Host || info.endpoint.Port != req.UserEndpoint.Port) {
		info.endpoint = req.UserEndpoint
		st.endpointEpoch++
	}
	if req.Topology != nil {
		info.topologyEpoch = req.Topology.Epoch
		if st.subtopologies == nil || req.Topology.Epoch > st.topologyEpoch || len(cg.members) == 0 {
			st.topologyEpoch = req.Topology.Epoch
			st.subtopologies = req.Topology.Subtopologies
			st.subIndex = make(map[string]int, len(st.subtopologies))
			for i, s := range st.subtopologies {
				st.subIndex[s.SubtopologyID] = i
			}
			cg.target = make(map[string]partitionSet) // tasks of another topology mean nothing now
			changed = true
		}
	}
	if req.ShutdownApplication {
		st.shutdown = true
	}
	if isNew {
		cg.members[m.id] = m
		st.members[m.id] = info
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
	}
	if req.MemberEpoch == 0 && m.epoch == epochStaticLeave {
		m.epoch = m.prevEpoch
	}
	if sig := c.refreshStreamsTopology(st); sig != cg.metaSig {
		cg.metaSig = sig
		changed = true
	}
	gcfg := c.streamsConfig(req.Group)
	if gcfg.standbys != st.numStandbys { // the assignment configuration changed (streams_configs.go)
		st.numStandbys = gcfg.standbys
		changed = true
	}
	if !sameTags(gcfg.rackTags, st.rackTags) { // the assignment configuration changed
		st.rackTags = gcfg.rackTags
		changed = true
	}
	if changed {
		cg.epoch++
	}
	delayed := ""
	if cg.epoch > cg.assignmentEpoch {
		if delayed = c.streamsAssignmentDelay(g, gcfg, firstJoin); delayed == "" {
			c.computeStreamsTarget(cg)
		}
	}
	c.reconcile(g, m, owned)
	c.scheduleStreamsSession(g, m)

	r.MemberID = m.id
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = ms(gcfg.heartbeatInterval)
	r.AcceptableRecoveryLagLegacy = int32(min(gcfg.acceptableLag, math.MaxInt32))
	r.AcceptableRecoveryLag = gcfg.acceptableLag
	r.TaskOffsetIntervalMillis = ms(gcfg.taskOffsetInterval)
	r.Status = append(r.Status, st.status...)
	if delayed != "" {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsAssignmentDelayed, StatusDetail: delayed})
	}
	if missing := missingClientTags(info, gcfg.rackTags); req.Version >= 1 && len(missing) > 0 {
		r.Status = append(r.Status, missingTagsStatus(missing))
	}
	if info.topologyEpoch < st.topologyEpoch {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is lower than the group's %d.", info.topologyEpoch, st.topologyEpoch)})
	}
	if st.shutdown {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsShutdownApplication,
			StatusDetail: "A member of the group requested the shutdown of the application."})
	}
	full := req.MemberEpoch == 0 || req.ActiveTasks != nil
	standby := st.standbyOf(m)
	if full || m.epoch != beforeEpoch || !equalPartitions(before, m.assigned) || !equalPartitions(standby, info.standbySent) {
		r.ActiveTasks = streamsTaskIDs(st, m.assigned)
		r.StandbyTasks = streamsTaskIDs(st, standby)
		r.WarmupTasks = []kmsg.TaskIDs{}
		info.standbySent = standby
	}
	r.EndpointInformationEpoch = st.endpointEpoch
	if req.EndpointInformationEpoch != st.endpointEpoch {
		r.PartitionsByUserEndpoint = c.streamsEndpoints(cg)
	}
	c.maybeAskTopologyDescription(st, req, r)
	c.persistConsumer(g, nil) // writes what changed (streams_persist.go)
	return 0, ""
}

// refreshStreamsTopology resolves the group's topology against the topics,
// sets the group's statuses and task counts, and returns a signature that
// changes when the tasks change.
func (c *Coordinator) refreshStreamsTopology(st *streamsState) string {
	plan := ResolveStreamsTopology(st.subtopologies, c.topics)
	st.status = nil
	if len(plan.Missing) > 0 {
		st.status = append(st.status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsMissingSourceTopics,
			StatusDetail: "Source topics " + strings.Join(plan.Missing, ", ") + " are missing."})
	}
	if len(plan.Incorrect) > 0 {
		st.status = append(st.status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsIncorrectPartitions,
			StatusDetail: "Topics " + strings.Join(plan.Incorrect, ", ") + " are not partitioned as the topology requires (copartitioned topics must have the same number of partitions; a changelog as many as its subtopology has tasks)."})
	}
	var absent []string
	for _, it := range plan.Internal {
		if _, ok := c.topics.Topic(it.Name); !ok {
			absent = append(absent, it.Name)
		}
	}
	if len(absent) > 0 {
		st.status = append(st.status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsMissingInternalTopics,
			StatusDetail: "Internal topics " + strings.Join(absent, ", ") + " are missing."})
	}
	st.tasks = map[string]int32{}
	if len(st.status) == 0 { // tasks only once every topic is there, as Kafka
		st.tasks = plan.Tasks
	}
	var b strings.Builder
	for _, s := range st.subtopologies {
		fmt.Fprintf(&b, "%s:%d;", s.SubtopologyID, st.tasks[s.SubtopologyID])
	}
	return fmt.Sprintf("streams/%d/%s", st.topologyEpoch, b.String())
}

// computeStreamsTarget assigns the active tasks: balanced over the members
// (at most one task apart, and the tasks of each subtopology spread as evenly
// as they can be, so that stateful subtopologies do not pile up on one
// member), sticky (a member keeps the tasks it has while within both
// shares), new tasks to the least loaded member, processes first, in the
// spirit of Kafka's sticky task assignor.
func (c *Coordinator) computeStreamsTarget(cg *consumerGroup) {
	st := cg.streams
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var tasks []tpID
	subQuota := map[[16]byte]int{}
	for i, s := range st.subtopologies {
		n := int(st.tasks[s.SubtopologyID])
		for p := 0; p < n; p++ {
			tasks = append(tasks, tpID{taskKey(i), int32(p)})
		}
		if len(ids) > 0 {
			subQuota[taskKey(i)] = (n + len(ids) - 1) / len(ids)
		}
	}
	target := make(map[string]partitionSet, len(ids))
	for _, id := range ids {
		target[id] = make(partitionSet)
	}
	cg.target = target
	cg.assignmentEpoch = cg.epoch
	st.assignedAt = c.clock.Now()
	if len(ids) == 0 || len(tasks) == 0 {
		return
	}
	quota := (len(tasks) + len(ids) - 1) / len(ids)
	subLoad := map[string]map[[16]byte]int{}
	for _, id := range ids {
		subLoad[id] = map[[16]byte]int{}
	}
	var free []tpID
	for _, t := range tasks {
		owner := ""
		for _, id := range ids {
			if cg.members[id].assigned[t] {
				owner = id
				break
			}
		}
		if owner != "" && len(target[owner]) < quota && subLoad[owner][t.id] < subQuota[t.id] {
			target[owner][t] = true
			subLoad[owner][t.id]++
		} else {
			free = append(free, t)
		}
	}
	perProcess := map[string]int{}
	for _, id := range ids {
		perProcess[st.members[id].processID] += len(target[id])
	}
	for _, t := range free {
		best := ""
		for _, id := range ids {
			if len(target[id]) >= quota {
				continue
			}
			if best == "" {
				best = id
				continue
			}
			a, b := subLoad[id][t.id], subLoad[best][t.id]
			la, lb := len(target[id]), len(target[best])
			pa, pb := perProcess[st.members[id].processID], perProcess[st.members[best].processID]
			if a < b || (a == b && (la < lb || (la == lb && pa < pb))) {
				best = id
			}
		}
		target[best][t] = true
		subLoad[best][t.id]++
		perProcess[st.members[best].processID]++
	}
	c.computeStandbys(cg, ids, tasks)
}

// computeStandbys places the group's standby count (streams.num.standby.replicas,
// else group.streams.num.standby.replicas) of standby replicas
// of every stateful task (one whose subtopology has a changelog): never on
// the member or the process that has the task active, never twice on one
// process, preferring the member that already has it as a standby, then the
// member with the fewest standbys.
func (c *Coordinator) computeStandbys(cg *consumerGroup, ids []string, tasks []tpID) {
	st := cg.streams
	prev := st.standby
	st.standby = make(map[string]partitionSet, len(ids))
	for _, id := range ids {
		st.standby[id] = make(partitionSet)
	}
	n := st.numStandbys
	if n <= 0 {
		return
	}
	stateful := map[[16]byte]bool{}
	for i, s := range st.subtopologies {
		if len(s.StateChangelogTopics) > 0 {
			stateful[taskKey(i)] = true
		}
	}
	activeOwner := map[tpID]string{}
	for id, set := range cg.target {
		for t := range set {
			activeOwner[t] = id
		}
	}
	for _, t := range tasks {
		if !stateful[t.id] {
			continue
		}
		usedProcess := map[string]bool{}
		usedTags := map[string]map[string]bool{}
		if o, ok := activeOwner[t]; ok {
			usedProcess[st.members[o].processID] = true
			st.useTags(o, usedTags)
		}
		for r := 0; r < n; r++ {
			best := ""
			for _, id := range ids {
				p := st.members[id].processID
				if usedProcess[p] || activeOwner[t] == id {
					continue
				}
				if best == "" {
					best = id
					continue
				}
				if oa, ob := st.tagOverlap(id, usedTags), st.tagOverlap(best, usedTags); oa != ob { // rack-aware tags first
					if oa < ob {
						best = id
					}
					continue
				}
				hadA, hadB := prev[id][t], prev[best][t]
				if hadA != hadB {
					if hadA {
						best = id
					}
					continue
				}
				// then the member with the most of the task's state (streams_task_offsets.go)
				if oa, ob := st.reportedOffset(id, t), st.reportedOffset(best, t); oa != ob {
					if oa > ob {
						best = id
					}
					continue
				}
				if len(st.standby[id]) < len(st.standby[best]) {
					best = id
				}
			}
			if best == "" {
				break // fewer processes than replicas
			}
			st.standby[best][t] = true
			usedProcess[st.members[best].processID] = true
			st.useTags(best, usedTags)
		}
	}
}

// standbyOf is m's standby tasks now: its target standbys except those it
// still owns (or is giving up) as active tasks.
func (st *streamsState) standbyOf(m *consumerMember) partitionSet {
	out := make(partitionSet)
	for t := range st.standby[m.id] {
		if !m.assigned[t] && !m.revoking[t] {
			out[t] = true
		}
	}
	return out
}

func (c *Coordinator) scheduleStreamsSession(g *group, m *consumerMember) {
	stopTimer(m.sessionTimer)
	m.seq++
	seq := m.seq
	session := c.streamsConfig(g.id).sessionTimeout
	m.sessionTimer = c.clock.AfterFunc(session, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || c.groups[g.id] != g || !g.isStreams() || g.consumer.members[m.id] != m || m.seq != seq {
			return
		}
		c.log.Info("group: streams member session expired", "group", g.id, "member", m.id)
		c.removeStreamsMember(g, m, "session expired")
	})
	if m.state == memberUnrevoked && m.revokeTimer == nil {
		timeout := m.rebalanceTimeout
		if timeout <= 0 {
			timeout = session
		}
		m.revokeTimer = c.clock.AfterFunc(timeout, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.closed || c.groups[g.id] != g || !g.isStreams() || g.consumer.members[m.id] != m || m.state != memberUnrevoked {
				return
			}
			c.log.Info("group: streams member did not revoke in time", "group", g.id, "member", m.id)
			c.removeStreamsMember(g, m, "revocation timed out")
		})
	}
	if m.state != memberUnrevoked && m.revokeTimer != nil {
		stopTimer(m.revokeTimer)
		m.revokeTimer = nil
	}
}

func (c *Coordinator) removeStreamsMember(g *group, m *consumerMember, why string) {
	st := g.consumer.streams
	if info := st.members[m.id]; info != nil && info.endpoint != nil {
		st.endpointEpoch++
	}
	delete(st.members, m.id)
	c.removeConsumerMember(g, m, why)
	if len(g.consumer.members) == 0 {
		st.shutdown = false
	}
}

func (c *Coordinator) streamsLeave(g *group, req *kmsg.StreamsGroupHeartbeatRequest, r *kmsg.StreamsGroupHeartbeatResponse) (int16, string) {
	cg := g.consumer
	m := cg.members[req.MemberID]
	if req.InstanceID != nil {
		curID, ok := cg.static[*req.InstanceID]
		if !ok {
			return kerr.UnknownMemberID.Code, ""
		}
		if curID != req.MemberID {
			return kerr.FencedInstanceID.Code, ""
		}
	}
	if m == nil {
		return kerr.UnknownMemberID.Code, ""
	}
	r.MemberID = m.id
	r.MemberEpoch = req.MemberEpoch
	r.HeartbeatIntervalMillis = ms(c.streamsConfig(req.Group).heartbeatInterval)
	if req.MemberEpoch == epochStaticLeave && m.instanceID != nil {
		if m.epoch != epochStaticLeave {
			m.prevEpoch = m.epoch
		}
		m.epoch = epochStaticLeave
		c.scheduleStreamsSession(g, m)
		c.persistConsumer(g, nil)
		return 0, ""
	}
	c.removeStreamsMember(g, m, "left the group")
	return 0, ""
}

// streamsOwned converts the tasks a member reports into the group's
// partition-set form (nil: not reported).
func streamsOwned(st *streamsState, tasks []kmsg.TaskIDs) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	if tasks == nil {
		return nil
	}
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range tasks {
		i, ok := st.subIndex[t.SubtopologyID]
		if !ok {
			continue
		}
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: taskKey(i), Partitions: t.Partitions})
	}
	return out
}

func streamsTaskIDs(st *streamsState, s partitionSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, tp := range groupByTopic(s) {
		for i, sub := range st.subtopologies {
			if taskKey(i) == tp.id {
				out = append(out, kmsg.TaskIDs{SubtopologyID: sub.SubtopologyID, Partitions: tp.partitions})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SubtopologyID < out[j].SubtopologyID })
	return out
}

// streamsEndpoints maps each member endpoint to the source and changelog
// partitions of its active tasks (interactive queries).
func (c *Coordinator) streamsEndpoints(cg *consumerGroup) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	st := cg.streams
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		info := st.members[id]
		if info == nil || info.endpoint == nil {
			continue
		}
		e := kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
		e.UserEndpoint.Host, e.UserEndpoint.Port = info.endpoint.Host, info.endpoint.Port
		byTopic := map[string][]int32{}
		for t := range cg.members[id].assigned {
			for i, sub := range st.subtopologies {
				if taskKey(i) != t.id {
					continue
				}
				for _, src := range sub.SourceTopics {
					byTopic[src] = append(byTopic[src], t.p)
				}
				for _, rt := range sub.RepartitionSourceTopics {
					byTopic[rt.Topic] = append(byTopic[rt.Topic], t.p)
				}
				for _, ct := range sub.StateChangelogTopics {
					byTopic[ct.Topic] = append(byTopic[ct.Topic], t.p)
				}
			}
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ps := byTopic[n]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: n, Partitions: ps})
		}
		if e.ActivePartitions == nil {
			e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		out = append(out, e)
	}
	return out
}
