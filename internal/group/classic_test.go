package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// formGroup brings a group of n dynamic members to Stable and returns their ids
// (leader first) and the generation.
func (e *env) formGroup(group string, n int) ([]string, int32) {
	e.t.Helper()
	var joins []*pendingJoin
	var ids []string
	for i := 0; i < n; i++ {
		joins = append(joins, e.joinNew(group, nil))
	}
	if !joins[0].done() {
		e.t.Fatal("first member's join did not complete")
	}
	if n > 1 {
		joins[0] = e.join(joinReq(group, joins[0].resp.MemberID, nil))
	}
	for _, j := range joins {
		if !j.done() {
			e.t.Fatal("join did not complete")
		}
	}
	gen := joins[0].resp.Generation
	leader := joins[0].resp.LeaderID
	ids = append(ids, leader)
	for _, j := range joins {
		if j.resp.ErrorCode != 0 || j.resp.Generation != gen {
			e.t.Fatalf("join not complete: %+v", j.resp)
		}
		if j.resp.MemberID != leader {
			ids = append(ids, j.resp.MemberID)
		}
	}
	assign := map[string]string{}
	for _, id := range ids {
		assign[id] = "a-" + id
	}
	var syncs []*pendingSync
	for _, id := range ids[1:] {
		syncs = append(syncs, e.sync(group, id, gen, nil))
	}
	ls := e.sync(group, leader, gen, assign)
	for _, s := range append(syncs, ls) {
		if s.calls != 1 || s.resp.ErrorCode != 0 {
			e.t.Fatalf("sync: %+v", s.resp)
		}
	}
	if st := e.state(group); st != "Stable" {
		e.t.Fatalf("state %s, want Stable", st)
	}
	return ids, gen
}

func TestMemberIDRequiredThenJoin(t *testing.T) {
	e := newEnv(t, Config{})
	first := e.join(joinReq("g", "", nil))
	mustCode(t, "first join", first.resp.ErrorCode, 79)
	if first.resp.MemberID == "" || first.resp.MemberID[:4] != "cli-" {
		t.Fatalf("member id %q: want client id prefix", first.resp.MemberID)
	}
	second := e.join(joinReq("g", first.resp.MemberID, nil))
	if !second.done() || second.resp.ErrorCode != 0 || second.resp.Generation != 1 || second.resp.LeaderID != first.resp.MemberID {
		t.Fatalf("second join: %+v", second.resp)
	}
	if len(second.resp.Members) != 1 || string(second.resp.Members[0].ProtocolMetadata) != "meta-range" {
		t.Fatalf("leader members: %+v", second.resp.Members)
	}
	if st := e.state("g"); st != "CompletingRebalance" {
		t.Fatalf("state %s", st)
	}
	// The KIP-394 pending id expires if never used.
	third := e.join(joinReq("g", "", nil))
	mustCode(t, "pending", third.resp.ErrorCode, 79)
	e.clock.Advance(11 * time.Second)
	if len(e.c.groups["g"].pending) != 0 {
		t.Fatal("pending member id did not expire")
	}
	// Old join versions get an id and join at once.
	old := joinReq("g2", "", nil)
	old.Version = 3
	j := e.join(old)
	if !j.done() || j.resp.ErrorCode != 0 || j.resp.MemberID == "" {
		t.Fatalf("v3 join: %+v", j.resp)
	}
}

func TestJoinValidation(t *testing.T) {
	e := newEnv(t, Config{})
	r := joinReq("", "", nil)
	mustCode(t, "empty group", e.join(r).resp.ErrorCode, 24)
	r = joinReq("g", "", nil)
	r.SessionTimeoutMillis = 10
	mustCode(t, "session timeout", e.join(r).resp.ErrorCode, 26)
	mustCode(t, "unknown member in unknown group", e.join(joinReq("g", "nope", nil)).resp.ErrorCode, 25)
	r = joinReq("g", "", nil)
	r.ProtocolType = ""
	first := e.join(r)
	mustCode(t, "empty protocol type", first.resp.ErrorCode, 23)
	ids, _ := e.formGroup("g", 1)
	r = joinReq("g", "", nil, "roundrobin")
	mustCode(t, "no common protocol", e.join(r).resp.ErrorCode, 23)
	r = joinReq("g", "", nil)
	r.ProtocolType = "connect"
	mustCode(t, "other protocol type", e.join(r).resp.ErrorCode, 23)
	mustCode(t, "unknown member", e.join(joinReq("g", "nope", nil)).resp.ErrorCode, 25)
	_ = ids
}

func TestTwoThenThreeMembersThenLeave(t *testing.T) {
	e := newEnv(t, Config{})
	ids, gen := e.formGroup("g", 1)
	m1 := ids[0]
	// A second member joins: the group prepares a rebalance, m1 learns it by heartbeat.
	j2 := e.joinNew("g", nil)
	if j2.done() {
		t.Fatal("second member's join completed before the first rejoined")
	}
	if st := e.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	mustCode(t, "heartbeat during rebalance", e.heartbeat("g", m1, gen, nil), 27)
	mustCode(t, "sync during rebalance", e.sync("g", m1, gen, nil).resp.ErrorCode, 27)
	j1 := e.join(joinReq("g", m1, nil))
	if !j1.done() || !j2.done() {
		t.Fatal("joins not completed once all members rejoined")
	}
	gen2 := j1.resp.Generation
	if gen2 != gen+1 || j2.resp.Generation != gen2 {
		t.Fatalf("generations %d %d", j1.resp.Generation, j2.resp.Generation)
	}
	if j1.resp.LeaderID != m1 || len(j1.resp.Members) != 2 || len(j2.resp.Members) != 0 {
		t.Fatalf("leader/members: %+v / %+v", j1.resp, j2.resp)
	}
	m2 := j2.resp.MemberID
	mustCode(t, "old generation heartbeat", e.heartbeat("g", m1, gen, nil), 22)
	s2 := e.sync("g", m2, gen2, nil)
	if s2.calls != 0 {
		t.Fatal("follower sync answered before the leader's")
	}
	s1 := e.sync("g", m1, gen2, map[string]string{m1: "p0,p1", m2: "p2,p3"})
	if s1.calls != 1 || s2.calls != 1 || string(s1.resp.MemberAssignment) != "p0,p1" || string(s2.resp.MemberAssignment) != "p2,p3" {
		t.Fatalf("sync: %+v %+v", s1.resp, s2.resp)
	}
	if *s2.resp.Protocol != "range" || *s2.resp.ProtocolType != "consumer" {
		t.Fatalf("sync protocol %v %v", *s2.resp.Protocol, *s2.resp.ProtocolType)
	}
	mustCode(t, "heartbeat stable", e.heartbeat("g", m2, gen2, nil), 0)

	// A third member; m2 never rejoins, so the rebalance timeout drops it.
	j3 := e.joinNew("g", nil)
	j1 = e.join(joinReq("g", m1, nil))
	if j1.done() {
		t.Fatal("completed without m2")
	}
	for i := 0; i < 6; i++ { // m2 stays alive by heartbeat but never rejoins
		mustCode(t, "m2 heartbeat", e.heartbeat("g", m2, gen2, nil), 27)
		e.clock.Advance(5 * time.Second)
	}
	if !j1.done() || !j3.done() || j1.resp.Generation != gen2+1 {
		t.Fatalf("after rebalance timeout: %+v %+v", j1.resp, j3.resp)
	}
	if len(j1.resp.Members) != 2 {
		t.Fatalf("members after m2 dropped: %d", len(j1.resp.Members))
	}
	mustCode(t, "dropped member heartbeat", e.heartbeat("g", m2, gen2, nil), 25)

	// LeaveGroup v3+ (batched), then v0 for the last one: the group ends Empty.
	m3 := j3.resp.MemberID
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m3}, {MemberID: "ghost"}}
	resp := e.c.LeaveGroup(lr)
	if resp.ErrorCode != 0 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != 25 {
		t.Fatalf("leave: %+v", resp)
	}
	lr = kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 0
	lr.Group = "g"
	lr.MemberID = m1
	mustCode(t, "leave v0", e.c.LeaveGroup(lr).ErrorCode, 0)
	if st := e.state("g"); st != "Empty" {
		t.Fatalf("state %s, want Empty", st)
	}
	lr.MemberID = "ghost"
	mustCode(t, "leave v0 unknown", e.c.LeaveGroup(lr).ErrorCode, 25)
}

func TestSessionExpiryTriggersRebalance(t *testing.T) {
	e := newEnv(t, Config{})
	ids, gen := e.formGroup("g", 2)
	// Only ids[0] keeps heartbeating.
	for i := 0; i < 3; i++ {
		e.clock.Advance(3 * time.Second)
		mustCode(t, "heartbeat", e.heartbeat("g", ids[0], gen, nil), 0)
	}
	e.clock.Advance(2 * time.Second)
	if st := e.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s after silent member", st)
	}
	mustCode(t, "heartbeat", e.heartbeat("g", ids[0], gen, nil), 27)
	j := e.join(joinReq("g", ids[0], nil))
	if !j.done() || j.resp.Generation != gen+1 || len(j.resp.Members) != 1 {
		t.Fatalf("rejoin: %+v", j.resp)
	}
	// Everyone goes silent: the group empties.
	e.sync("g", ids[0], gen+1, nil)
	e.clock.Advance(time.Minute)
	if st := e.state("g"); st != "Empty" {
		t.Fatalf("state %s, want Empty", st)
	}
}

func TestSyncTimeoutRemovesMembersThatNeverSync(t *testing.T) {
	e := newEnv(t, Config{})
	j := e.joinNew("g", nil)
	if !j.done() {
		t.Fatal("join")
	}
	e.clock.Advance(31 * time.Second) // rebalance timeout without SyncGroup
	if st := e.state("g"); st != "Empty" {
		t.Fatalf("state %s", st)
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	e := newEnv(t, Config{InitialRebalanceDelay: 3 * time.Second})
	j1 := e.joinNew("g", nil)
	e.clock.Advance(2 * time.Second)
	j2 := e.joinNew("g", nil)
	if j1.done() || j2.done() {
		t.Fatal("joins completed during the initial delay")
	}
	e.clock.Advance(1 * time.Second) // first delay ends, a member was added: extend
	if j1.done() {
		t.Fatal("completed although a member joined during the delay")
	}
	e.clock.Advance(3 * time.Second)
	if !j1.done() || !j2.done() || j1.resp.Generation != 1 || j2.resp.Generation != 1 {
		t.Fatalf("after delay: %+v %+v", j1.resp, j2.resp)
	}
}

func TestStaticMemberRestartWithoutRebalance(t *testing.T) {
	e := newEnv(t, Config{})
	inst := strp("instance-1")
	j := e.joinNew("g", inst)
	if !j.done() || j.resp.ErrorCode != 0 {
		t.Fatalf("static join: %+v", j.resp)
	}
	old := j.resp.MemberID
	gen := j.resp.Generation
	dyn := e.joinNew("g", nil)
	j = e.join(joinReq("g", old, inst))
	if !j.done() || !dyn.done() {
		t.Fatal("rebalance with two members did not complete")
	}
	gen = j.resp.Generation
	leader := j.resp.LeaderID
	other := dyn.resp.MemberID
	if leader != old {
		t.Fatalf("leader %s", leader)
	}
	e.sync("g", other, gen, nil)
	e.sync("g", old, gen, map[string]string{old: "static-part", other: "dyn-part"})

	// The static member "restarts": unknown member id, same instance id.
	re := kmsg.NewPtrJoinGroupRequest()
	*re = *joinReq("g", "", inst)
	rj := e.join(re)
	if !rj.done() || rj.resp.ErrorCode != 0 {
		t.Fatalf("restart join: %+v", rj.resp)
	}
	if rj.resp.MemberID == old || rj.resp.Generation != gen || !rj.resp.SkipAssignment {
		t.Fatalf("restart join should keep generation %d with new id and skip assignment: %+v", gen, rj.resp)
	}
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("state %s, want Stable (no rebalance)", st)
	}
	mustCode(t, "old id fenced", e.heartbeat("g", old, gen, inst), 82)
	mustCode(t, "other member unaffected", e.heartbeat("g", other, gen, nil), 0)
	s := e.sync("g", rj.resp.MemberID, gen, nil)
	if s.resp.ErrorCode != 0 || string(s.resp.MemberAssignment) != "static-part" {
		t.Fatalf("restarted member's sync: %+v", s.resp)
	}
	// A second process with the same instance id but the old member id is fenced.
	mustCode(t, "duplicate instance join", e.join(joinReq("g", old, inst)).resp.ErrorCode, 82)
	// A static member that stays away past its session timeout is removed.
	for i := 0; i < 5; i++ {
		e.clock.Advance(3 * time.Second)
		e.heartbeat("g", other, gen, nil)
	}
	if st := e.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s after static member's session expired", st)
	}
}

func TestProtocolSelectionByVote(t *testing.T) {
	e := newEnv(t, Config{})
	j1 := e.joinNew("g", nil, "roundrobin", "range")
	e.sync("g", j1.resp.MemberID, j1.resp.Generation, nil)
	j2 := e.joinNew("g", nil, "range", "roundrobin")
	j3 := e.joinNew("g", nil, "range", "sticky", "roundrobin")
	j1 = e.join(joinReq("g", j1.resp.MemberID, nil, "roundrobin", "range"))
	if !j1.done() || !j2.done() || !j3.done() {
		t.Fatal("rebalance incomplete")
	}
	if *j1.resp.Protocol != "range" {
		t.Fatalf("selected %q, want range (2 votes to 1)", *j1.resp.Protocol)
	}
	var got string
	for _, m := range j1.resp.Members {
		if m.MemberID == j2.resp.MemberID {
			got = string(m.ProtocolMetadata)
		}
	}
	if got != "meta-range" {
		t.Fatalf("leader sees metadata %q for the selected protocol", got)
	}
}

func TestConnectProtocolTypeWorks(t *testing.T) {
	e := newEnv(t, Config{})
	r := joinReq("connect-cluster", "", nil, "sessioned")
	r.ProtocolType = "connect"
	first := e.join(r)
	r2 := joinReq("connect-cluster", first.resp.MemberID, nil, "sessioned")
	r2.ProtocolType = "connect"
	j := e.join(r2)
	if !j.done() || j.resp.ErrorCode != 0 || *j.resp.ProtocolType != "connect" {
		t.Fatalf("connect join: %+v", j.resp)
	}
}

// A static leader that restarts with JoinGroup below v9 (librdkafka sends v5) cannot be
// told to skip the assignment: as Kafka, the Stable group does not rebalance and the
// answer names the old leader id with no members, so the member runs no assignor.
func TestStaticLeaderRestartBelowV9(t *testing.T) {
	e := newEnv(t, Config{})
	inst := strp("instance-1")
	j := e.joinNew("g", inst)
	old := j.resp.MemberID
	dyn := e.joinNew("g", nil)
	j = e.join(joinReq("g", old, inst))
	if !j.done() || !dyn.done() || j.resp.LeaderID != old {
		t.Fatalf("rebalance with two members: %+v", j.resp)
	}
	gen, other := j.resp.Generation, dyn.resp.MemberID
	e.sync("g", other, gen, nil)
	e.sync("g", old, gen, map[string]string{old: "static-part", other: "dyn-part"})

	re := joinReq("g", "", inst)
	re.Version = 5
	rj := e.join(re)
	if !rj.done() || rj.resp.ErrorCode != 0 || rj.resp.MemberID == old || rj.resp.Generation != gen {
		t.Fatalf("restart join: %+v", rj.resp)
	}
	if rj.resp.LeaderID != old || len(rj.resp.Members) != 0 {
		t.Fatalf("v5 restart of the leader: leader %q (want the old id %q), %d members (want none)",
			rj.resp.LeaderID, old, len(rj.resp.Members))
	}
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("state %s, want Stable (no rebalance)", st)
	}
	mustCode(t, "other member unaffected", e.heartbeat("g", other, gen, nil), 0)
	if s := e.sync("g", rj.resp.MemberID, gen, nil); s.resp.ErrorCode != 0 || string(s.resp.MemberAssignment) != "static-part" {
		t.Fatalf("restarted member's sync: %+v", s.resp)
	}
	if s := e.sync("g", other, gen, nil); s.resp.ErrorCode != 0 || string(s.resp.MemberAssignment) != "dyn-part" {
		t.Fatalf("other member's sync: %+v", s.resp)
	}
}
