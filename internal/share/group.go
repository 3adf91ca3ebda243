package share

import (
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AssignorName is the only share-group assignor, Kafka's default.
const AssignorName = "simple"

// Group is a share group: its members, their subscriptions and the
// assignment of the group epoch.
type Group struct {
	ID              string
	Epoch           int32
	AssignmentEpoch int32
	members         map[string]*member
	// topicsHash fingerprints the partition counts of the subscribed topics;
	// a change (topic created, partitions added) bumps the group epoch.
	topicsHash string
	// initialized holds the share partitions whose state the group
	// initialized (init_state.go; record 15).
	initialized map[[16]byte]*initTopic
}

type member struct {
	id, clientID, clientHost string
	rack                     *string
	epoch, prevEpoch         int32
	hasMeta                  bool // loaded: its metadata record was read (membership.go)
	topics                   []string
	assigned                 map[[16]byte][]int32
	deadline                 time.Time
}

// Client identifies the connection a heartbeat came from.
type Client struct{ ID, Host string }

func errResp(resp *kmsg.ShareGroupHeartbeatResponse, e *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp.ErrorCode = e.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// Heartbeat serves ShareGroupHeartbeat: join (epoch 0), leave (epoch -1) or
// heartbeat; every member's assignment follows the group epoch at once
// (share groups have no revocation phase).
func (m *Manager) Heartbeat(req *kmsg.ShareGroupHeartbeatRequest, c Client) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(m.cfg.HeartbeatInterval / time.Millisecond)
	switch {
	case req.GroupID == "":
		return errResp(resp, kerr.InvalidRequest, "GroupId can't be empty.")
	case req.MemberID == "":
		return errResp(resp, kerr.InvalidRequest, "MemberId can't be empty.")
	case req.MemberEpoch < -1:
		return errResp(resp, kerr.InvalidRequest, "MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return errResp(resp, kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	}
	now := m.now()
	// Asked before taking the manager's lock: the group coordinator's lock is
	// never taken under it (the coordinator reads group configs here).
	m.mu.Lock()
	known := m.groups[req.GroupID] != nil
	m.mu.Unlock()
	var stored map[string][]byte
	other := false
	if !known {
		if m.members != nil {
			stored = m.members.ShareRecordsOf(req.GroupID) // a group this broker did not hold (membership.go)
		}
		other = stored == nil && m.otherGroup(req.GroupID)
	}
	m.mu.Lock()
	g := m.groups[req.GroupID]
	if g == nil && stored != nil {
		g = m.loadGroupLocked(req.GroupID, stored)
	}
	if g == nil {
		// As Kafka's group coordinator: only a join (epoch 0) creates the
		// group; a heartbeat or a leave for a group that does not exist (or
		// is not a share group) is GROUP_ID_NOT_FOUND.
		switch {
		case other:
			m.mu.Unlock()
			return errResp(resp, kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
		case req.MemberEpoch == -1:
			m.mu.Unlock()
			return errResp(resp, kerr.GroupIDNotFound, "Group "+req.GroupID+" not found.")
		case req.MemberEpoch != 0:
			m.mu.Unlock()
			return errResp(resp, kerr.GroupIDNotFound, "Share group "+req.GroupID+" not found.")
		}
		g = &Group{ID: req.GroupID, members: map[string]*member{}}
		m.groups[req.GroupID] = g
	}
	released := m.expireMembersLocked(g, now)
	mb := g.members[req.MemberID]
	switch {
	case req.MemberEpoch == -1:
		if mb == nil {
			// Kafka's shareGroupLeave: the member must be in the group.
			m.mu.Unlock()
			m.persistAll(released)
			return errResp(resp, kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.GroupID+".")
		}
		delete(g.members, mb.id)
		g.Epoch++
		released = append(released, m.releaseMemberLocked(g.ID, mb.id)...)
		m.mu.Unlock()
		m.persistAll(released)
		m.persistMembership(g.ID)
		resp.MemberID = &req.MemberID
		resp.MemberEpoch = -1
		return resp
	case req.MemberEpoch == 0:
		if mb == nil {
			if len(g.members) >= m.cfg.MaxGroupSize {
				m.mu.Unlock()
				m.persistAll(released)
				return errResp(resp, kerr.GroupMaxSizeReached, "")
			}
			mb = &member{id: req.MemberID}
			g.members[mb.id] = mb
			g.Epoch++
		}
		mb.epoch = 0 // a rejoin gets the full assignment again
	case mb == nil:
		m.mu.Unlock()
		m.persistAll(released)
		return errResp(resp, kerr.UnknownMemberID, "")
	case req.MemberEpoch != mb.epoch:
		m.mu.Unlock()
		m.persistAll(released)
		return errResp(resp, kerr.FencedMemberEpoch, "")
	}
	eff := m.effectiveLocked(g.ID)
	resp.HeartbeatIntervalMillis = int32(eff.HeartbeatInterval / time.Millisecond)
	mb.clientID, mb.clientHost, mb.deadline = c.ID, c.Host, now.Add(eff.SessionTimeout)
	if req.RackID != nil {
		mb.rack = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		topics := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, mb.topics) {
			mb.topics = topics
			g.Epoch++
		}
	}
	if h := m.topicsHashLocked(g); h != g.topicsHash {
		g.topicsHash = h
		g.Epoch++
	}
	if m.initializeLocked(g) && g.AssignmentEpoch == g.Epoch {
		g.Epoch++ // partitions became assignable (init_state.go)
	}
	if m.groups[g.ID] != g || g.members[req.MemberID] != mb {
		// Removed while the share coordinator was asked (m.mu released).
		m.mu.Unlock()
		m.persistAll(released)
		return errResp(resp, kerr.UnknownMemberID, "")
	}
	if g.AssignmentEpoch != g.Epoch {
		m.assignLocked(g)
	}
	if mb.epoch != g.Epoch {
		mb.prevEpoch, mb.epoch = mb.epoch, g.Epoch
		resp.Assignment = m.assignmentLocked(mb)
	} else if mb.epoch != req.MemberEpoch {
		// The member's epoch moved on while this heartbeat waited for another
		// one's initialization (whose response the client may never have
		// read): a member learns a new epoch only with its assignment.
		resp.Assignment = m.assignmentLocked(mb)
	}
	resp.MemberID = &req.MemberID
	resp.MemberEpoch = mb.epoch
	m.mu.Unlock()
	m.persistAll(released)
	m.persistMembership(g.ID)
	return resp
}

func (m *Manager) persistAll(ps []*Partition) {
	for _, p := range ps {
		_ = m.Persist(p)
	}
}

// expireMembersLocked removes members whose session timed out.
func (m *Manager) expireMembersLocked(g *Group, now time.Time) []*Partition {
	var released []*Partition
	for id, mb := range g.members {
		if now.After(mb.deadline) {
			delete(g.members, id)
			g.Epoch++
			released = append(released, m.releaseMemberLocked(g.ID, id)...)
		}
	}
	return released
}

func (m *Manager) topicsHashLocked(g *Group) string {
	var names []string
	for _, mb := range g.members {
		names = append(names, mb.topics...)
	}
	sort.Strings(names)
	names = slices.Compact(names)
	var h []byte
	for _, n := range names {
		t, ok := m.topics.Topic(n)
		h = append(h, n...)
		if ok {
			h = append(h, t.ID[:]...)
			h = append(h, byte(t.Partitions>>24), byte(t.Partitions>>16), byte(t.Partitions>>8), byte(t.Partitions))
		}
		h = append(h, 0)
	}
	return string(h)
}

// assignLocked computes the target assignment of the group epoch with
// Kafka's simple assignor: for each topic, its subscribers (by member id)
// share its partitions round robin; when there are more subscribers than
// partitions, partitions are given to several members so that every member
// gets one.
func (m *Manager) assignLocked(g *Group) {
	ids := make([]string, 0, len(g.members))
	for id, mb := range g.members {
		ids = append(ids, id)
		mb.assigned = map[[16]byte][]int32{}
	}
	sort.Strings(ids)
	topicSet := map[string]bool{}
	for _, mb := range g.members {
		for _, t := range mb.topics {
			topicSet[t] = true
		}
	}
	for name := range topicSet {
		t, ok := m.topics.Topic(name)
		if !ok || t.Partitions <= 0 {
			continue
		}
		var subs []*member
		for _, id := range ids {
			if slices.Contains(g.members[id].topics, name) {
				subs = append(subs, g.members[id])
			}
		}
		var ps []int32 // the assignable partitions (init_state.go)
		for p := int32(0); p < t.Partitions; p++ {
			if m.assignableLocked(g, t.ID, p) {
				ps = append(ps, p)
			}
		}
		n := len(ps)
		if n == 0 {
			continue
		}
		if len(subs) >= n {
			for i, mb := range subs {
				mb.assigned[t.ID] = append(mb.assigned[t.ID], ps[i%n])
			}
		} else {
			for i, p := range ps {
				mb := subs[i%len(subs)]
				mb.assigned[t.ID] = append(mb.assigned[t.ID], p)
			}
		}
	}
	g.AssignmentEpoch = g.Epoch
}

func (m *Manager) assignmentLocked(mb *member) *kmsg.ShareGroupHeartbeatResponseAssignment {
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, id := range sortedIDs(mb.assigned) {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID = id
		tp.Partitions = slices.Sorted(slices.Values(mb.assigned[id]))
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return &a
}

func sortedIDs(m map[[16]byte][]int32) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int {
		for i := range a {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	return ids
}

// Describe serves ShareGroupDescribe.
func (m *Manager) Describe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	now := m.now()
	m.mu.Lock()
	var released []*Partition
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		g := m.groups[id]
		switch {
		case id == "":
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			if m.otherGroup(id) {
				msg = "Group " + id + " is not a share group."
			}
			dg.ErrorMessage = &msg
		default:
			released = append(released, m.expireMembersLocked(g, now)...)
			if h := m.topicsHashLocked(g); h != g.topicsHash {
				g.topicsHash = h
				g.Epoch++
				m.assignLocked(g)
			}
			dg.GroupState = "Stable"
			if len(g.members) == 0 {
				dg.GroupState = "Empty"
			}
			dg.GroupEpoch, dg.AssignmentEpoch, dg.Assignor = g.Epoch, g.AssignmentEpoch, AssignorName
			ids := make([]string, 0, len(g.members))
			for mid := range g.members {
				ids = append(ids, mid)
			}
			sort.Strings(ids)
			for _, mid := range ids {
				mb := g.members[mid]
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.RackID, dm.MemberEpoch = mb.id, mb.rack, mb.epoch
				dm.ClientID, dm.ClientHost = mb.clientID, mb.clientHost
				dm.SubscribedTopicNames = slices.Clone(mb.topics)
				for _, tid := range sortedIDs(mb.assigned) {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.TopicID = tid
					if t, ok := m.topics.TopicByID(tid); ok {
						tp.Topic = t.Name
					}
					tp.Partitions = slices.Sorted(slices.Values(mb.assigned[tid]))
					dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	m.mu.Unlock()
	m.persistAll(released)
	return resp
}

// GroupSummary is a share group as ListGroups reports it.
type GroupSummary struct {
	ID    string
	State string // Empty or Stable
}

// List returns every share group.
func (m *Manager) List() []GroupSummary {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]GroupSummary, 0, len(m.groups))
	for id, g := range m.groups {
		st := "Stable"
		if len(g.members) == 0 {
			st = "Empty"
		}
		out = append(out, GroupSummary{ID: id, State: st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Exists reports whether id is a share group.
func (m *Manager) Exists(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groups[id] != nil
}

// Delete deletes an empty share group and its share-partition state; it
// returns a Kafka error code (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP).
func (m *Manager) Delete(id string) int16 {
	m.mu.Lock()
	g := m.groups[id]
	if g == nil {
		m.mu.Unlock()
		return kerr.GroupIDNotFound.Code
	}
	m.expireMembersLocked(g, m.now())
	if len(g.members) > 0 {
		m.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	delete(m.groups, id)
	defer m.persistMembership(id) // tombstones (membership.go)
	var keys []Key
	for k := range m.parts {
		if k.Group == id {
			keys = append(keys, k)
			delete(m.parts, k)
		}
	}
	for _, k := range initializedKeysLocked(g) { // initialized, never fetched here
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	if m.store != nil {
		for _, k := range keys {
			_ = m.store.Write(k, nil)
		}
	}
	return 0
}
