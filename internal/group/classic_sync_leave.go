package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup handles a classic SyncGroup (v0-v5); it blocks until the leader's
// assignment arrives (or ctx ends: nil).
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	return wait(ctx, func(cb func(*kmsg.SyncGroupResponse)) { c.syncGroup(req, cb) })
}

func (c *Coordinator) syncGroup(req *kmsg.SyncGroupRequest, cb func(*kmsg.SyncGroupResponse)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := req.Version
	fail := func(code int16) { cb(syncError(v, code)) }
	if c.notCoordinator(req.Group) {
		fail(kerr.NotCoordinator.Code)
		return
	}
	if !validGroupID(req.Group) {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	g := c.groups[req.Group]
	if g == nil || g.consumer != nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	if g.state == stateDead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		fail(code)
		return
	}
	if req.Generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		fail(kerr.UnknownMemberID.Code)
	case statePreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case stateCompletingRebalance:
		delete(g.pendingSync, m.id)
		if m.syncCB != nil {
			m.syncCB(syncError(m.syncVersion, kerr.RebalanceInProgress.Code))
		}
		m.syncCB, m.syncVersion = cb, v
		c.touchMember(g, m)
		if m.id != g.leader {
			return
		}
		assigned := make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			assigned[a.MemberID] = a.MemberAssignment
		}
		for _, om := range g.members {
			om.assignment = assigned[om.id] // members the leader left out get nothing
		}
		g.transition(stateStable, c.clock.Now())
		_ = c.persist(g.id, g.metadataRecord())
		for _, om := range g.members {
			if om.syncCB != nil {
				r := c.syncResponse(g, om, om.syncVersion)
				scb := om.syncCB
				om.syncCB = nil
				scb(r)
			}
		}
	case stateStable:
		delete(g.pendingSync, m.id)
		c.touchMember(g, m)
		cb(c.syncResponse(g, m, v))
	}
}

func (c *Coordinator) syncResponse(g *group, m *member, v int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = v
	pt, p := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &pt, &p
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// Heartbeat handles a classic Heartbeat (v0-v4).
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrHeartbeatResponse()
	r.Version = req.Version
	r.ErrorCode = c.heartbeat(req)
	return r
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if c.notCoordinator(req.Group) {
		return kerr.NotCoordinator.Code
	}
	if !validGroupID(req.Group) {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[req.Group]
	if g == nil || g.consumer != nil {
		return kerr.UnknownMemberID.Code
	}
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		return kerr.UnknownMemberID.Code
	case statePreparingRebalance:
		c.touchMember(g, m)
		return kerr.RebalanceInProgress.Code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	c.touchMember(g, m)
	return 0
}

// LeaveGroup handles a classic LeaveGroup: v0-v2 name one member by id, v3+ a batch of
// members by id and/or group.instance.id.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrLeaveGroupResponse()
	r.Version = req.Version
	members := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{lm}
	}
	top := int16(0)
	g := c.groups[req.Group]
	switch {
	case c.notCoordinator(req.Group):
		top = kerr.NotCoordinator.Code
	case !validGroupID(req.Group):
		top = kerr.InvalidGroupID.Code
	case g != nil && g.consumer != nil:
		top = kerr.UnknownMemberID.Code
	case g != nil && g.state == stateDead:
		top = kerr.CoordinatorNotAvailable.Code
	}
	if top != 0 {
		r.ErrorCode = top
		if req.Version >= 3 {
			for _, lm := range members {
				rm := kmsg.NewLeaveGroupResponseMember()
				rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, top
				r.Members = append(r.Members, rm)
			}
		}
		return r
	}
	for _, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		rm.ErrorCode = c.leaveOne(g, lm)
		r.Members = append(r.Members, rm)
	}
	if req.Version < 3 {
		r.ErrorCode = r.Members[0].ErrorCode
		r.Members = nil
	}
	return r
}

func (c *Coordinator) leaveOne(g *group, lm kmsg.LeaveGroupRequestMember) int16 {
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if lm.InstanceID != nil {
		cur, ok := g.static[*lm.InstanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if lm.MemberID != "" && lm.MemberID != cur {
			return kerr.FencedInstanceID.Code
		}
		c.removeMemberAndUpdate(g, g.members[cur])
		return 0
	}
	if t, ok := g.pending[lm.MemberID]; ok {
		stopTimer(t)
		delete(g.pending, lm.MemberID)
		c.maybeCompleteJoin(g)
		return 0
	}
	m, ok := g.members[lm.MemberID]
	if !ok {
		return kerr.UnknownMemberID.Code
	}
	c.removeMemberAndUpdate(g, m)
	return 0
}
