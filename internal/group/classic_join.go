package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup handles a classic JoinGroup (v0-v9). It blocks until the rebalance
// completes (or ctx ends, then it returns nil: the connection is gone).
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	return wait(ctx, func(cb func(*kmsg.JoinGroupResponse)) { c.joinGroup(cl, req, cb) })
}

// joinGroup is JoinGroup's state-machine step; cb is called exactly once, perhaps later
// (from a timer or another member's request).
func (c *Coordinator) joinGroup(cl Client, req *kmsg.JoinGroupRequest, cb func(*kmsg.JoinGroupResponse)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := req.Version
	fail := func(code int16) { cb(joinError(v, code, req.MemberID)) }
	if c.notCoordinator(req.Group) {
		fail(kerr.NotCoordinator.Code)
		return
	}
	if !validGroupID(req.Group) {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout.Code)
		return
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if v == 0 || req.RebalanceTimeoutMillis <= 0 {
		rebalance = session // v0 has no rebalance timeout: Kafka uses the session timeout
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		fail(kerr.InvalidRequest.Code)
		return
	}

	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			fail(kerr.UnknownMemberID.Code)
			return
		}
		g = newGroup(req.Group, c.clock.Now())
		c.groups[req.Group] = g
	}
	if g.consumer != nil {
		if !g.isEmpty() {
			fail(kerr.InconsistentGroupProtocol.Code)
			return
		}
		c.convertToClassic(g)
	}
	if g.state == stateDead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	names := make([]string, len(req.Protocols))
	for i, p := range req.Protocols {
		names[i] = p.Name
	}
	if !g.supportsProtocols(req.ProtocolType, names) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}

	nm := &member{
		instanceID:       req.InstanceID,
		clientID:         cl.ID,
		clientHost:       cl.Host,
		sessionTimeout:   session,
		rebalanceTimeout: rebalance,
		protocolType:     req.ProtocolType,
		protocols:        req.Protocols,
		joinVersion:      v,
	}
	if req.MemberID == "" {
		c.joinUnknownMember(g, nm, v, cb)
	} else {
		c.joinKnownMember(g, req.MemberID, nm, v, cb)
	}
}

func (c *Coordinator) joinUnknownMember(g *group, nm *member, v int16, cb func(*kmsg.JoinGroupResponse)) {
	newID := nm.clientID + "-" + uuidString(newUUID())
	if nm.instanceID != nil {
		if oldID, ok := g.static[*nm.instanceID]; ok {
			c.replaceStaticMember(g, oldID, newID, nm, v, cb)
			return
		}
		if len(g.members) >= c.cfg.MaxGroupSize {
			cb(joinError(v, kerr.GroupMaxSizeReached.Code, ""))
			return
		}
		nm.id = newID
		c.addMemberAndRebalance(g, nm, cb)
		return
	}
	if len(g.members)+len(g.pending) >= c.cfg.MaxGroupSize {
		cb(joinError(v, kerr.GroupMaxSizeReached.Code, ""))
		return
	}
	if v >= 4 {
		// KIP-394: hand out the id first; the member must come back with it.
		id := newID
		g.pending[id] = c.clock.AfterFunc(nm.sessionTimeout, func() { c.expirePending(g, id) })
		cb(joinError(v, kerr.MemberIDRequired.Code, id))
		return
	}
	nm.id = newID
	c.addMemberAndRebalance(g, nm, cb)
}

func (c *Coordinator) expirePending(g *group, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] != g {
		return
	}
	if _, ok := g.pending[id]; !ok {
		return
	}
	delete(g.pending, id)
	c.maybeCompleteJoin(g)
}

func (c *Coordinator) joinKnownMember(g *group, memberID string, nm *member, v int16, cb func(*kmsg.JoinGroupResponse)) {
	if t, ok := g.pending[memberID]; ok {
		stopTimer(t)
		delete(g.pending, memberID)
		if nm.instanceID != nil {
			if _, taken := g.static[*nm.instanceID]; taken {
				cb(joinError(v, kerr.FencedInstanceID.Code, memberID))
				return
			}
		}
		nm.id = memberID
		c.addMemberAndRebalance(g, nm, cb)
		return
	}
	if code := g.validateMember(memberID, nm.instanceID); code != 0 {
		cb(joinError(v, code, memberID))
		return
	}
	m := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		c.updateMemberAndRebalance(g, m, nm, v, cb)
	case stateCompletingRebalance:
		if sameProtocols(m.protocols, nm.protocols) {
			// The member missed its JoinGroup response: give it again.
			c.touchMember(g, m)
			cb(c.joinResponse(g, m, v, false))
			return
		}
		c.updateMemberAndRebalance(g, m, nm, v, cb)
	case stateStable:
		if memberID == g.leader || !sameProtocols(m.protocols, nm.protocols) {
			c.updateMemberAndRebalance(g, m, nm, v, cb)
			return
		}
		c.touchMember(g, m)
		cb(c.joinResponse(g, m, v, false))
	default: // Empty, Dead
		cb(joinError(v, kerr.UnknownMemberID.Code, memberID))
	}
}

// validateMember is Kafka's static/dynamic member check shared by every classic API.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		if cur, ok := g.static[*instanceID]; ok && cur != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// replaceStaticMember lets a restarted static member take over its old identity
// (KIP-345): the old member id is fenced and, in a Stable group whose protocols did not
// change, no rebalance happens.
func (c *Coordinator) replaceStaticMember(g *group, oldID, newID string, nm *member, v int16, cb func(*kmsg.JoinGroupResponse)) {
	old := g.members[oldID]
	if old.joinCB != nil {
		old.joinCB(joinError(old.joinVersion, kerr.FencedInstanceID.Code, oldID))
		old.joinCB = nil
	}
	if old.syncCB != nil {
		old.syncCB(syncError(old.syncVersion, kerr.FencedInstanceID.Code))
		old.syncCB = nil
	}
	stopTimer(old.sessionTimer)
	old.sessionSeq++
	delete(g.members, oldID)
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	nm.id = newID
	nm.assignment = old.assignment
	g.members[newID] = nm
	g.static[*nm.instanceID] = newID
	wasLeader := g.leader == oldID
	if wasLeader {
		g.leader = newID
	}

	switch g.state {
	case stateStable:
		// As in Kafka, changed metadata alone does not rebalance: only a change of the
		// selected protocol does. Otherwise the member keeps its assignment and the
		// other members see nothing.
		if g.selectProtocol() != g.protocol {
			nm.joinCB, nm.joinVersion = cb, v
			c.prepareRebalance(g, "static member rejoined with a change of protocol")
			c.maybeCompleteJoin(g)
			return
		}
		_ = c.persist(g.id, g.metadataRecord())
		c.scheduleSession(g, nm)
		resp := c.joinResponse(g, nm, v, wasLeader)
		if wasLeader && v < 9 {
			// Below v9 a leader cannot be told to skip the assignment, and the
			// assignment a leader sends to a Stable group is ignored: as Kafka does,
			// answer with the old leader id and no members, so that the member does
			// not see itself as the leader, runs no assignor and just syncs.
			resp.LeaderID = oldID
			resp.Members = nil
		}
		cb(resp)
	case stateCompletingRebalance:
		nm.joinCB, nm.joinVersion = cb, v
		c.prepareRebalance(g, "static member replaced during CompletingRebalance")
		c.maybeCompleteJoin(g)
	default: // PreparingRebalance (a group with members cannot be Empty)
		nm.joinCB, nm.joinVersion = cb, v
		c.scheduleSession(g, nm)
		c.maybeCompleteJoin(g)
	}
}

func (c *Coordinator) addMemberAndRebalance(g *group, m *member, cb func(*kmsg.JoinGroupResponse)) {
	m.isNew = true
	m.joinCB = cb
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.newMemberAdded = true
	c.scheduleSession(g, m)
	switch g.state {
	case stateEmpty, stateStable, stateCompletingRebalance:
		c.prepareRebalance(g, "new member joined")
	}
	c.maybeCompleteJoin(g)
}

func (c *Coordinator) updateMemberAndRebalance(g *group, m, nm *member, v int16, cb func(*kmsg.JoinGroupResponse)) {
	m.protocols = nm.protocols
	m.protocolType = nm.protocolType
	m.sessionTimeout = nm.sessionTimeout
	m.rebalanceTimeout = nm.rebalanceTimeout
	m.clientID, m.clientHost = nm.clientID, nm.clientHost
	if m.joinCB != nil {
		// A second JoinGroup while the first is pending: the first one is answered
		// with a retriable error; the newest call is the one that waits.
		m.joinCB(joinError(m.joinVersion, kerr.RebalanceInProgress.Code, m.id))
	}
	m.joinCB, m.joinVersion = cb, v
	c.touchMember(g, m)
	if g.state != statePreparingRebalance {
		c.prepareRebalance(g, "member rejoined")
	}
	c.maybeCompleteJoin(g)
}

// prepareRebalance moves the group to PreparingRebalance and arms the join timer.
func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncCB != nil {
				m.syncCB(syncError(m.syncVersion, kerr.RebalanceInProgress.Code))
				m.syncCB = nil
			}
		}
	}
	g.timerSeq++
	stopTimer(g.syncTimer)
	stopTimer(g.rebalanceTimer)
	clear(g.pendingSync)
	initial := g.state == stateEmpty && c.cfg.InitialRebalanceDelay > 0
	g.transition(statePreparingRebalance, c.clock.Now())
	c.log.Debug("group: preparing rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	seq := g.timerSeq
	if initial {
		g.initialDelay = true
		g.newMemberAdded = false
		delay := c.cfg.InitialRebalanceDelay
		total := g.maxRebalanceTimeout()
		if delay > total {
			delay = total
		}
		g.initialRemaining = total - delay
		g.rebalanceTimer = c.clock.AfterFunc(delay, func() { c.onInitialDelay(g, seq) })
		return
	}
	g.initialDelay = false
	g.rebalanceTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.onRebalanceTimeout(g, seq) })
}

func (c *Coordinator) onInitialDelay(g *group, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] != g || g.timerSeq != seq || g.state != statePreparingRebalance {
		return
	}
	if g.newMemberAdded && g.initialRemaining > 0 {
		g.newMemberAdded = false
		d := c.cfg.InitialRebalanceDelay
		if d > g.initialRemaining {
			d = g.initialRemaining
		}
		g.initialRemaining -= d
		g.rebalanceTimer = c.clock.AfterFunc(d, func() { c.onInitialDelay(g, seq) })
		return
	}
	g.initialDelay = false
	c.completeJoin(g)
}

func (c *Coordinator) onRebalanceTimeout(g *group, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] != g || g.timerSeq != seq || g.state != statePreparingRebalance {
		return
	}
	c.completeJoin(g)
}

// maybeCompleteJoin completes the join phase once every member has rejoined (never
// during the initial delay, which only its timer ends).
func (c *Coordinator) maybeCompleteJoin(g *group) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoin(g)
	}
}

// completeJoin ends PreparingRebalance: members that did not rejoin are dropped
// (static ones stay until their session expires), the generation advances, a
// protocol is chosen, and every waiting member gets its JoinGroup response.
func (c *Coordinator) completeJoin(g *group) {
	g.timerSeq++
	stopTimer(g.rebalanceTimer)
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		if m.joinCB == nil && !m.isStatic() {
			c.removeMember(g, m)
		}
	}
	now := c.clock.Now()
	if len(g.members) == 0 {
		g.generation++
		g.protocol = ""
		g.leader = ""
		g.transition(stateEmpty, now)
		_ = c.persist(g.id, g.metadataRecord())
		return
	}
	if g.awaitingJoin() == 0 {
		// Only static members that have not come back: wait for them (or for their
		// sessions to expire) another rebalance timeout.
		seq := g.timerSeq
		g.rebalanceTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.onRebalanceTimeout(g, seq) })
		return
	}
	if l, ok := g.members[g.leader]; !ok || l.joinCB == nil {
		for _, id := range g.sortedMemberIDs() {
			if g.members[id].joinCB != nil {
				g.leader = id
				break
			}
		}
	}
	g.generation++
	g.protocol = g.selectProtocol()
	g.transition(stateCompletingRebalance, now)
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		g.pendingSync[id] = true
		if m.joinCB != nil {
			cb := m.joinCB
			m.joinCB = nil
			m.isNew = false
			cb(c.joinResponse(g, m, m.joinVersion, false))
		}
		c.scheduleSession(g, m)
	}
	seq := g.timerSeq
	g.syncTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.onSyncTimeout(g, seq) })
}

func (c *Coordinator) joinResponse(g *group, m *member, v int16, skipAssignment bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = v
	r.Generation = g.generation
	pt := g.protocolType
	r.ProtocolType = &pt
	p := g.protocol
	r.Protocol = &p
	r.LeaderID = g.leader
	r.MemberID = m.id
	if m.id == g.leader {
		r.Members = g.currentMembers()
		r.SkipAssignment = skipAssignment && v >= 9
	}
	return r
}

// onSyncTimeout removes members that never sent SyncGroup for this generation.
func (c *Coordinator) onSyncTimeout(g *group, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] != g || g.timerSeq != seq || len(g.pendingSync) == 0 {
		return
	}
	if g.state != stateCompletingRebalance && g.state != stateStable {
		return
	}
	for id := range g.pendingSync {
		if m, ok := g.members[id]; ok {
			c.removeMember(g, m)
		}
	}
	clear(g.pendingSync)
	c.prepareRebalance(g, "members failed to sync in time")
	c.maybeCompleteJoin(g)
}

// touchMember restarts the member's session timer (any request from it counts).
func (c *Coordinator) touchMember(g *group, m *member) { c.scheduleSession(g, m) }

func (c *Coordinator) scheduleSession(g *group, m *member) {
	stopTimer(m.sessionTimer)
	m.sessionSeq++
	seq := m.sessionSeq
	m.sessionTimer = c.clock.AfterFunc(m.sessionTimeout, func() { c.onSessionExpired(g, m, seq) })
}

func (c *Coordinator) onSessionExpired(g *group, m *member, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[g.id] != g || g.members[m.id] != m || m.sessionSeq != seq {
		return
	}
	if m.joinCB != nil || m.syncCB != nil {
		// A member with a request in flight is alive; the rebalance timeouts bound it.
		c.scheduleSession(g, m)
		return
	}
	c.log.Info("group: member session expired", "group", g.id, "member", m.id)
	c.removeMemberAndUpdate(g, m)
}

// removeMember drops m from the group, answering its pending calls with UNKNOWN_MEMBER_ID.
func (c *Coordinator) removeMember(g *group, m *member) {
	stopTimer(m.sessionTimer)
	m.sessionSeq++
	if m.joinCB != nil {
		m.joinCB(joinError(m.joinVersion, kerr.UnknownMemberID.Code, m.id))
		m.joinCB = nil
	}
	if m.syncCB != nil {
		m.syncCB(syncError(m.syncVersion, kerr.UnknownMemberID.Code))
		m.syncCB = nil
	}
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		for _, id := range g.sortedMemberIDs() {
			g.leader = id
			break
		}
	}
}

// removeMemberAndUpdate removes m and moves the group on, as a leave or an expired
// session does.
func (c *Coordinator) removeMemberAndUpdate(g *group, m *member) {
	c.removeMember(g, m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.prepareRebalance(g, "member left")
	}
	c.maybeCompleteJoin(g)
}
