package group

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member epochs with special meaning in ConsumerGroupHeartbeat.
const (
	epochLeave       = -1 // the member leaves
	epochStaticLeave = -2 // a static member leaves temporarily and keeps its assignment
)

type reconcileState int8

const (
	memberStable     reconcileState = iota
	memberUnrevoked                 // must give up partitions before moving on
	memberUnreleased                // waits for partitions other members still own
)

// consumerGroup is a KIP-848 group: the broker computes a target assignment for every
// group epoch and moves each member towards it, never giving a partition to a member
// before its previous owner has revoked it.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	static          map[string]string
	target          map[string]partitionSet
	owner           map[tpID]string   // assigned or pending revocation
	metaSig         string            // topicsSignature(metaTopics)
	metaTopics      []cgTopicMetadata // subscribed topics' metadata at the last epoch bump
	assignor        string
	emptySince      time.Time
	// streams is set for a streams group (KIP-1071, streams_group.go),
	// whose partitions are tasks.
	streams *streamsState
}

type consumerMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	epoch, prevEpoch int32
	state            reconcileState
	rebalanceTimeout time.Duration
	subscribed       []string
	regex            *string
	serverAssignor   *string
	resolvedTopics   []string
	assigned         partitionSet
	revoking         partitionSet

	sessionTimer, revokeTimer Timer
	seq                       uint64
}

func newConsumerGroup(now time.Time) *consumerGroup {
	return &consumerGroup{
		members:    make(map[string]*consumerMember),
		static:     make(map[string]string),
		target:     make(map[string]partitionSet),
		owner:      make(map[tpID]string),
		emptySince: now,
	}
}

func (cg *consumerGroup) stopTimers() {
	for _, m := range cg.members {
		m.seq++
		stopTimer(m.sessionTimer)
		stopTimer(m.revokeTimer)
	}
}

func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) validateCommit(memberID string, epoch int32) int16 {
	if memberID == "" && epoch < 0 {
		if len(cg.members) == 0 {
			return 0
		}
		return kerr.UnknownMemberID.Code
	}
	m := cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch != m.epoch && epoch != m.prevEpoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

func (cg *consumerGroup) validateFetch(memberID string, epoch int32) int16 {
	m := cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch >= 0 && epoch != m.epoch && epoch != m.prevEpoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

func (c *Coordinator) convertToClassic(g *group) {
	g.consumer.stopTimers()
	g.consumer = nil
	g.protocolType = ""
	g.transition(stateEmpty, c.clock.Now())
	c.persistConsumer(g, nil) // tombstones the consumer-group records
}

func (c *Coordinator) convertToConsumer(g *group) {
	g.stopTimers()
	clear(g.pending)
	g.consumer = newConsumerGroup(c.clock.Now())
	g.consumer.epoch = g.generation
	g.consumer.assignmentEpoch = g.generation
	g.protocolType = "consumer"
}

// ConsumerGroupHeartbeat handles the KIP-848 ConsumerGroupHeartbeat (v0-v1): join
// (epoch 0), heartbeat and acknowledge (epoch > 0), leave (-1) and static leave (-2).
// Consumer groups are durable (consumer_persist.go): every change is written to
// __consumer_offsets before the response (a failed write is logged and the difference
// is written with the next change), and after a restart a member that heartbeats or
// commits within its session timeout keeps its id, epoch and partitions.
func (c *Coordinator) ConsumerGroupHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.Version = req.Version
	code, msg := c.consumerHeartbeat(cl, req, r)
	if code != 0 {
		r.ErrorCode = code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		r.Assignment = nil
	}
	return r
}

func (c *Coordinator) consumerHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, r *kmsg.ConsumerGroupHeartbeatResponse) (int16, string) {
	if c.notCoordinator(req.Group) {
		return kerr.NotCoordinator.Code, ""
	}
	if code, msg := c.validateConsumerHeartbeat(req); code != 0 {
		return code, msg
	}
	now := c.clock.Now()
	g := c.groups[req.Group]
	if req.MemberEpoch == epochLeave || req.MemberEpoch == epochStaticLeave {
		if g == nil || g.consumer == nil {
			return kerr.UnknownMemberID.Code, "Group " + req.Group + " not found."
		}
		return c.consumerLeave(g, req, r)
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return kerr.UnknownMemberID.Code, "Group " + req.Group + " not found."
		}
		g = newGroup(req.Group, now)
		c.groups[req.Group] = g
		c.convertToConsumer(g)
	} else if g.isStreams() {
		return kerr.GroupIDNotFound.Code, "Group " + req.Group + " is not a consumer group."
	} else if g.consumer == nil {
		if !g.isEmpty() || g.state != stateEmpty {
			return kerr.GroupIDNotFound.Code, "Group " + req.Group + " is not a consumer group."
		}
		if req.MemberEpoch != 0 {
			return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + req.Group + "."
		}
		c.convertToConsumer(g)
	}
	cg := g.consumer
	epochBefore, assignmentEpochBefore := cg.epoch, cg.assignmentEpoch
	tookOver := false

	// Find or create the member.
	memberID := req.MemberID
	if memberID == "" {
		memberID = uuidString(newUUID())
	}
	var m *consumerMember
	if req.InstanceID == nil {
		m = cg.members[memberID]
		if m == nil && req.MemberEpoch != 0 {
			return kerr.UnknownMemberID.Code, "Member " + memberID + " is not a member of group " + req.Group + "."
		}
	} else {
		curID, has := cg.static[*req.InstanceID]
		if req.MemberEpoch == 0 {
			if has && curID != memberID {
				old := cg.members[curID]
				if old.epoch != epochStaticLeave {
					return kerr.UnreleasedInstanceID.Code, "Static member " + *req.InstanceID + " is still in use."
				}
				m = c.takeOverStatic(cg, old, memberID)
				tookOver = true
			} else if has {
				m = cg.members[curID]
			}
		} else {
			if !has {
				return kerr.UnknownMemberID.Code, "Instance " + *req.InstanceID + " is not a member of group " + req.Group + "."
			}
			if curID != memberID {
				return kerr.FencedInstanceID.Code, "Instance " + *req.InstanceID + " belongs to another member."
			}
			m = cg.members[curID]
		}
	}
	isNew := m == nil
	if isNew {
		if len(cg.members) >= c.cfg.MaxGroupSize {
			return kerr.GroupMaxSizeReached.Code, ""
		}
		m = &consumerMember{id: memberID, instanceID: req.InstanceID, assigned: make(partitionSet)}
	} else if req.MemberEpoch != 0 {
		if code := m.checkEpoch(req.MemberEpoch, req.Topics); code != 0 {
			return code, fmt.Sprintf("The member epoch %d is not the expected epoch %d.", req.MemberEpoch, m.epoch)
		}
	}

	// Update the member.
	before := clonePartitions(m.assigned)
	beforeEpoch := m.epoch
	m.clientID, m.clientHost = cl.ID, cl.Host
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = req.ServerAssignor
	}
	changed := isNew
	if req.SubscribedTopicNames != nil {
		names := append([]string(nil), req.SubscribedTopicNames...)
		sort.Strings(names)
		if !equalStrings(names, m.subscribed) {
			m.subscribed = names
			changed = true
		}
	}
	if req.SubscribedTopicRegex != nil {
		re := req.SubscribedTopicRegex
		if *re == "" {
			re = nil
		}
		if (re == nil) != (m.regex == nil) || (re != nil && *re != *m.regex) {
			m.regex = re
			changed = true
		}
	}
	if isNew {
		cg.members[m.id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
	}
	if req.MemberEpoch == 0 && m.epoch == epochStaticLeave {
		m.epoch = m.prevEpoch
	}
	if sig, topics := c.refreshSubscriptions(cg); sig != cg.metaSig {
		cg.metaSig, cg.metaTopics = sig, topics
		changed = true
	}
	if changed {
		cg.epoch++
	}
	if cg.epoch > cg.assignmentEpoch {
		c.computeTarget(cg)
	}
	c.reconcile(g, m, req.Topics)
	c.scheduleConsumerSession(g, m)
	if changed || tookOver || cg.epoch != epochBefore || cg.assignmentEpoch != assignmentEpochBefore {
		c.persistConsumer(g, nil)
	} else {
		c.persistConsumer(g, m)
	}

	r.MemberID = &m.id
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = ms(c.consumerHeartbeatInterval(g.id))
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 && req.SubscribedTopicNames != nil && req.Topics != nil)
	if full || m.epoch != beforeEpoch || !equalPartitions(before, m.assigned) {
		r.Assignment = c.responseAssignment(m.assigned)
	}
	return 0, ""
}

func (c *Coordinator) validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	bad := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case req.MemberEpoch < epochStaticLeave:
		return bad("MemberEpoch is invalid.")
	}
	if req.MemberEpoch == 0 {
		switch {
		case req.Version >= 1 && req.MemberID == "":
			return bad("MemberId can't be empty.")
		case req.RebalanceTimeoutMillis == -1:
			return bad("RebalanceTimeoutMs must be provided in first request.")
		case len(req.Topics) > 0:
			return bad("TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	} else if req.MemberID == "" {
		return bad("MemberId can't be empty.")
	}
	if req.ServerAssignor != nil && !contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " + strings.Join(c.cfg.ConsumerAssignors, ", ") + "."
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex is invalid: " + err.Error()
		}
	}
	return 0, ""
}

// checkEpoch fences a member whose epoch is not the current one; the previous epoch is
// accepted when the member's owned partitions show it only missed a response.
func (m *consumerMember) checkEpoch(epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) int16 {
	if epoch == m.epoch {
		return 0
	}
	if epoch < m.epoch && epoch == m.prevEpoch && owned != nil && subsetOf(owned, m.assigned) {
		return 0
	}
	return kerr.FencedMemberEpoch.Code
}

func subsetOf(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, set partitionSet) bool {
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !set[tpID{t.TopicID, p}] {
				return false
			}
		}
	}
	return true
}

func ownedSet(owned []kmsg.ConsumerGroupHeartbeatRequestTopic) partitionSet {
	s := make(partitionSet)
	for _, t := range owned {
		for _, p := range t.Partitions {
			s[tpID{t.TopicID, p}] = true
		}
	}
	return s
}

// takeOverStatic hands a temporarily departed static member's identity, epoch and
// assignment to the new member id (KIP-848's static membership).
func (c *Coordinator) takeOverStatic(cg *consumerGroup, old *consumerMember, newID string) *consumerMember {
	old.seq++
	stopTimer(old.sessionTimer)
	stopTimer(old.revokeTimer)
	nm := *old
	nm.id = newID
	nm.sessionTimer, nm.revokeTimer = nil, nil
	nm.seq = 0
	delete(cg.members, old.id)
	cg.members[newID] = &nm
	cg.static[*nm.instanceID] = newID
	if t, ok := cg.target[old.id]; ok {
		delete(cg.target, old.id)
		cg.target[newID] = t
	}
	for p, id := range cg.owner {
		if id == old.id {
			cg.owner[p] = newID
		}
	}
	return &nm
}

func (c *Coordinator) consumerLeave(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, r *kmsg.ConsumerGroupHeartbeatResponse) (int16, string) {
	cg := g.consumer
	var m *consumerMember
	if req.InstanceID != nil {
		curID, ok := cg.static[*req.InstanceID]
		if !ok {
			return kerr.UnknownMemberID.Code, ""
		}
		if curID != req.MemberID {
			return kerr.FencedInstanceID.Code, ""
		}
		m = cg.members[curID]
	} else {
		m = cg.members[req.MemberID]
	}
	if m == nil {
		return kerr.UnknownMemberID.Code, ""
	}
	r.MemberID = &m.id
	r.MemberEpoch = req.MemberEpoch
	r.HeartbeatIntervalMillis = ms(c.consumerHeartbeatInterval(g.id))
	if req.MemberEpoch == epochStaticLeave && m.instanceID != nil {
		// Keep the assignment for the session timeout; a restarted instance takes it.
		if m.epoch != epochStaticLeave {
			m.prevEpoch = m.epoch
		}
		m.epoch = epochStaticLeave
		c.scheduleConsumerSession(g, m)
		c.persistConsumer(g, m)
		return 0, ""
	}
	c.removeConsumerMember(g, m, "left the group")
	return 0, ""
}

// removeConsumerMember drops m, frees its partitions and bumps the group epoch.
func (c *Coordinator) removeConsumerMember(g *group, m *consumerMember, why string) {
	cg := g.consumer
	m.seq++
	stopTimer(m.sessionTimer)
	stopTimer(m.revokeTimer)
	delete(cg.members, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	delete(cg.target, m.id)
	for p, id := range cg.owner {
		if id == m.id {
			delete(cg.owner, p)
		}
	}
	cg.epoch++
	if len(cg.members) == 0 {
		cg.emptySince = c.clock.Now()
	}
	c.log.Debug("group: consumer member removed", "group", g.id, "member", m.id, "why", why, "epoch", cg.epoch)
	c.persistConsumer(g, nil)
}

func (c *Coordinator) scheduleConsumerSession(g *group, m *consumerMember) {
	stopTimer(m.sessionTimer)
	m.seq++
	seq := m.seq
	m.sessionTimer = c.clock.AfterFunc(c.consumerSessionTimeout(g.id), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || c.groups[g.id] != g || g.consumer == nil || g.consumer.members[m.id] != m || m.seq != seq {
			return
		}
		c.log.Info("group: consumer member session expired", "group", g.id, "member", m.id)
		c.removeConsumerMember(g, m, "session expired")
	})
	if m.state == memberUnrevoked && m.revokeTimer == nil {
		timeout := m.rebalanceTimeout
		if timeout <= 0 {
			timeout = c.consumerSessionTimeout(g.id)
		}
		m.revokeTimer = c.clock.AfterFunc(timeout, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.closed || c.groups[g.id] != g || g.consumer == nil || g.consumer.members[m.id] != m || m.state != memberUnrevoked {
				return
			}
			c.log.Info("group: consumer member did not revoke in time", "group", g.id, "member", m.id)
			c.removeConsumerMember(g, m, "revocation timed out")
		})
	}
	if m.state != memberUnrevoked && m.revokeTimer != nil {
		stopTimer(m.revokeTimer)
		m.revokeTimer = nil
	}
}

// refreshSubscriptions resolves every member's subscription (names and regex) against
// the current topics and returns the subscribed topics' metadata and its signature; a
// changed signature (topic created, deleted or grown) means a new group epoch.
func (c *Coordinator) refreshSubscriptions(cg *consumerGroup) (string, []cgTopicMetadata) {
	var all []TopicInfo
	needAll := false
	for _, m := range cg.members {
		if m.regex != nil {
			needAll = true
		}
	}
	if needAll {
		all = c.topics.AllTopics()
	}
	union := make(map[string]TopicInfo)
	for _, m := range cg.members {
		var res []string
		seen := make(map[string]bool)
		for _, n := range m.subscribed {
			if t, ok := c.topics.Topic(n); ok && !seen[n] {
				seen[n] = true
				res = append(res, n)
				union[n] = t
			}
		}
		if m.regex != nil {
			if re, err := compileTopicRegex(*m.regex); err == nil {
				for _, t := range all {
					if !seen[t.Name] && re.MatchString(t.Name) {
						seen[t.Name] = true
						res = append(res, t.Name)
						union[t.Name] = t
					}
				}
			}
		}
		sort.Strings(res)
		m.resolvedTopics = res
	}
	names := sortedTopicNames(union)
	topics := make([]cgTopicMetadata, len(names))
	for i, n := range names {
		t := union[n]
		topics[i] = cgTopicMetadata{id: t.ID, name: n, partitions: t.Partitions}
	}
	return topicsSignature(topics), topics
}

// computeTarget runs the group's assignor for the current group epoch.
func (c *Coordinator) computeTarget(cg *consumerGroup) {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	topics := make(map[string]TopicInfo)
	members := make([]assignMember, 0, len(ids))
	for _, id := range ids {
		m := cg.members[id]
		members = append(members, assignMember{id: id, topics: m.resolvedTopics})
		for _, n := range m.resolvedTopics {
			if t, ok := c.topics.Topic(n); ok {
				topics[n] = t
			}
		}
	}
	name := c.chooseAssignor(cg)
	cg.assignor = name
	cg.target = assign(name, members, topics, cg.target)
	cg.assignmentEpoch = cg.epoch
}

// chooseAssignor is the server assignor most members ask for (ties and no votes go to
// the first of group.consumer.assignors).
func (c *Coordinator) chooseAssignor(cg *consumerGroup) string {
	votes := make(map[string]int)
	for _, m := range cg.members {
		if m.serverAssignor != nil {
			votes[*m.serverAssignor]++
		}
	}
	name := c.cfg.ConsumerAssignors[0]
	for _, a := range c.cfg.ConsumerAssignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	return name
}

// reconcile moves m one step towards its target assignment: first revoke what it must
// give up (its epoch stays), then take the new partitions that are free (its epoch
// becomes the assignment epoch); partitions still owned elsewhere come later.
func (c *Coordinator) reconcile(g *group, m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	cg := g.consumer
	if m.epoch == epochStaticLeave {
		return
	}
	switch m.state {
	case memberUnrevoked:
		if owned == nil {
			return
		}
		os := ownedSet(owned)
		for p := range m.revoking {
			if os[p] {
				return // not revoked yet
			}
		}
		for p := range m.revoking {
			if cg.owner[p] == m.id {
				delete(cg.owner, p)
			}
		}
		m.revoking = nil
		m.state = memberStable
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
	}
	target := cg.target[m.id]
	var revoke partitionSet
	for p := range m.assigned {
		if !target[p] {
			if revoke == nil {
				revoke = make(partitionSet)
			}
			revoke[p] = true
		}
	}
	if len(revoke) > 0 {
		for p := range revoke {
			delete(m.assigned, p)
		}
		m.revoking = revoke
		m.state = memberUnrevoked
		return
	}
	unreleased := 0
	for p := range target {
		if m.assigned[p] {
			continue
		}
		if o, ok := cg.owner[p]; ok && o != m.id {
			unreleased++
			continue
		}
		m.assigned[p] = true
		cg.owner[p] = m.id
	}
	if m.epoch != cg.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	}
	if unreleased > 0 {
		m.state = memberUnreleased
	} else {
		m.state = memberStable
	}
}

func (c *Coordinator) responseAssignment(s partitionSet) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
	for _, t := range groupByTopic(s) {
		rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		rt.TopicID, rt.Partitions = t.id, t.partitions
		a.Topics = append(a.Topics, rt)
	}
	if a.Topics == nil {
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	}
	return a
}

type topicPartitions struct {
	id         [16]byte
	partitions []int32
}

func groupByTopic(s partitionSet) []topicPartitions {
	by := make(map[[16]byte][]int32)
	for p := range s {
		by[p.id] = append(by[p.id], p.p)
	}
	out := make([]topicPartitions, 0, len(by))
	for id, ps := range by {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out = append(out, topicPartitions{id, ps})
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].id[:]) < string(out[j].id[:]) })
	return out
}

func clonePartitions(s partitionSet) partitionSet {
	out := make(partitionSet, len(s))
	for p := range s {
		out[p] = true
	}
	return out
}

func equalPartitions(a, b partitionSet) bool {
	if len(a) != len(b) {
		return false
	}
	for p := range a {
		if !b[p] {
			return false
		}
	}
	return true
}

// ConsumerGroupDescribe handles ConsumerGroupDescribe (v0-v1).
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrConsumerGroupDescribeResponse()
	r.Version = req.Version
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
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
			msg := "Group " + id + " not found."
			dg.ErrorMessage = &msg
		case g.consumer == nil || g.isStreams():
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " is not a consumer group."
			dg.ErrorMessage = &msg
		default:
			cg := g.consumer
			dg.State = cg.stateName()
			dg.Epoch = cg.epoch
			dg.AssignmentEpoch = cg.assignmentEpoch
			dg.AssignorName = cg.assignor
			if dg.AssignorName == "" {
				dg.AssignorName = c.cfg.ConsumerAssignors[0]
			}
			ids := make([]string, 0, len(cg.members))
			for mid := range cg.members {
				ids = append(ids, mid)
			}
			sort.Strings(ids)
			for _, mid := range ids {
				m := cg.members[mid]
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID = m.id
				dm.InstanceID = m.instanceID
				dm.RackID = m.rackID
				dm.MemberEpoch = m.epoch
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				dm.SubscribedTopics = append([]string{}, m.subscribed...)
				dm.SubscribedTopicRegex = m.regex
				dm.Assignment = c.describeAssignment(m.assigned)
				dm.TargetAssignment = c.describeAssignment(cg.target[m.id])
				dm.MemberType = 1 // consumer protocol
				dg.Members = append(dg.Members, dm)
			}
		}
		r.Groups = append(r.Groups, dg)
	}
	return r
}

func (c *Coordinator) describeAssignment(s partitionSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	for _, t := range groupByTopic(s) {
		at := kmsg.NewAssignmentTopicPartition()
		at.TopicID = t.id
		if info, ok := c.topics.TopicByID(t.id); ok {
			at.Topic = info.Name
		}
		at.Partitions = t.partitions
		a.TopicPartitions = append(a.TopicPartitions, at)
	}
	return a
}
