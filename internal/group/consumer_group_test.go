package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type cgMember struct {
	id    string
	epoch int32
	owned map[[16]byte][]int32
}

func (e *env) cgHeartbeat(group string, m *cgMember, topics []string, instance *string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = group, m.id, m.epoch, instance
	r.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		r.RebalanceTimeoutMillis = 30000
		r.SubscribedTopicNames = topics
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if m.owned != nil {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range m.owned {
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
		}
	}
	resp := e.c.ConsumerGroupHeartbeat(testClient, r)
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = map[[16]byte][]int32{}
			for _, t := range resp.Assignment.Topics {
				m.owned[t.TopicID] = t.Partitions
			}
		}
	}
	return resp
}

func (m *cgMember) count() int {
	n := 0
	for _, ps := range m.owned {
		n += len(ps)
	}
	return n
}

func TestConsumerGroupJoinRevokeAndAssign(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 4)
	m1 := &cgMember{id: "m1"}
	resp := e.cgHeartbeat("g", m1, []string{"t"}, nil)
	mustCode(t, "join", resp.ErrorCode, 0)
	if m1.epoch != 1 || m1.count() != 4 {
		t.Fatalf("m1 epoch %d owns %d", m1.epoch, m1.count())
	}
	m2 := &cgMember{id: "m2"}
	e.cgHeartbeat("g", m2, []string{"t"}, nil)
	if m2.count() != 0 || m2.epoch != 2 {
		t.Fatalf("m2 got %d partitions at epoch %d before m1 revoked", m2.count(), m2.epoch)
	}
	// m1 is told to keep two partitions; its epoch stays until it has revoked.
	e.cgHeartbeat("g", m1, nil, nil)
	if m1.count() != 2 || m1.epoch != 1 {
		t.Fatalf("m1 after target change: %d partitions, epoch %d", m1.count(), m1.epoch)
	}
	if st := e.cgState("g"); st != "Reconciling" {
		t.Fatalf("state %s", st)
	}
	e.cgHeartbeat("g", m1, nil, nil) // acknowledges with its owned partitions
	if m1.epoch != 2 {
		t.Fatalf("m1 epoch after revoking: %d", m1.epoch)
	}
	e.cgHeartbeat("g", m2, nil, nil)
	if m2.count() != 2 {
		t.Fatalf("m2 owns %d after release", m2.count())
	}
	if st := e.cgState("g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	for id, ps := range m1.owned {
		for _, p := range ps {
			for _, q := range m2.owned[id] {
				if p == q {
					t.Fatalf("partition %d owned twice", p)
				}
			}
		}
	}
	// Fencing.
	bad := &cgMember{id: "m1", epoch: 7}
	mustCode(t, "future epoch", e.cgHeartbeat("g", bad, nil, nil).ErrorCode, 110)
	ghost := &cgMember{id: "ghost", epoch: 2}
	mustCode(t, "unknown member", e.cgHeartbeat("g", ghost, nil, nil).ErrorCode, 25)
	nogroup := &cgMember{id: "x", epoch: 3}
	mustCode(t, "unknown group", e.cgHeartbeat("nogroup", nogroup, nil, nil).ErrorCode, 25)
	// Classic calls on a consumer group.
	mustCode(t, "classic join", e.join(joinReq("g", "", nil)).resp.ErrorCode, 23)

	// m2 leaves: m1 gets everything back at the next epoch.
	leave := &cgMember{id: "m2", epoch: -1}
	if r := e.cgHeartbeat("g", leave, nil, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	e.cgHeartbeat("g", m1, nil, nil)
	if m1.count() != 4 || m1.epoch != 3 {
		t.Fatalf("m1 after m2 left: %d partitions at epoch %d", m1.count(), m1.epoch)
	}
	// Commits are fenced by member epoch.
	mustCode(t, "commit current epoch", commitCode(e.c.OffsetCommit(commitReq("g", "m1", m1.epoch, "t", map[int32]int64{0: 1}))), 0)
	mustCode(t, "commit stale epoch", commitCode(e.c.OffsetCommit(commitReq("g", "m1", 1, "t", map[int32]int64{0: 1}))), 113)
	// Session expiry empties the group.
	e.clock.Advance(46 * time.Second)
	if st := e.cgState("g"); st != "Empty" {
		t.Fatalf("state %s after session expiry", st)
	}
}

func TestConsumerGroupValidation(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 1)
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group = "g"
	r.MemberEpoch = 0
	r.RebalanceTimeoutMillis = 1000
	r.SubscribedTopicNames = []string{"t"}
	mustCode(t, "v1 empty member id", e.c.ConsumerGroupHeartbeat(testClient, r).ErrorCode, 42)
	r.MemberID = "m"
	bad := "nope"
	r.ServerAssignor = &bad
	mustCode(t, "unknown assignor", e.c.ConsumerGroupHeartbeat(testClient, r).ErrorCode, 112)
	r.ServerAssignor = nil
	re := "("
	r.SubscribedTopicRegex = &re
	mustCode(t, "bad regex", e.c.ConsumerGroupHeartbeat(testClient, r).ErrorCode, 128)
	r.SubscribedTopicRegex = nil
	r.Version = 0
	r.MemberID = ""
	resp := e.c.ConsumerGroupHeartbeat(testClient, r)
	if resp.ErrorCode != 0 || resp.MemberID == nil || *resp.MemberID == "" {
		t.Fatalf("v0 join should get a server-made member id: %+v", resp)
	}
}

func TestConsumerGroupStaticMember(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 2)
	inst := strp("i1")
	m1 := &cgMember{id: "a"}
	e.cgHeartbeat("g", m1, []string{"t"}, inst)
	dup := &cgMember{id: "b"}
	mustCode(t, "instance in use", e.cgHeartbeat("g", dup, []string{"t"}, inst).ErrorCode, 111)
	// Temporary leave (-2) keeps the assignment for the new incarnation.
	tl := &cgMember{id: "a", epoch: -2}
	if r := e.cgHeartbeat("g", tl, nil, inst); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	m1b := &cgMember{id: "c"}
	resp := e.cgHeartbeat("g", m1b, []string{"t"}, inst)
	mustCode(t, "rejoin", resp.ErrorCode, 0)
	if m1b.count() != 2 || m1b.epoch != m1.epoch {
		t.Fatalf("restarted static member: %d partitions epoch %d (was %d)", m1b.count(), m1b.epoch, m1.epoch)
	}
	old := &cgMember{id: "a", epoch: m1.epoch}
	mustCode(t, "old incarnation fenced", e.cgHeartbeat("g", old, nil, inst).ErrorCode, 82)
}

func (e *env) cgState(group string) string {
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Groups = []string{group}
	return e.c.ConsumerGroupDescribe(r).Groups[0].State
}

func TestAssignors(t *testing.T) {
	t1 := TopicInfo{Name: "a", ID: [16]byte{1}, Partitions: 5}
	t2 := TopicInfo{Name: "b", ID: [16]byte{2}, Partitions: 2}
	topics := map[string]TopicInfo{"a": t1, "b": t2}
	members := []assignMember{{"m1", []string{"a", "b"}}, {"m2", []string{"a", "b"}}, {"m3", []string{"a", "b"}}}
	u := assignUniform(members, topics, nil)
	total := 0
	for _, m := range members {
		n := len(u[m.id])
		if n < 2 || n > 3 {
			t.Fatalf("uniform: %s has %d of 7", m.id, n)
		}
		total += n
	}
	if total != 7 {
		t.Fatalf("uniform assigned %d", total)
	}
	// Sticky: removing m3 keeps m1's and m2's partitions.
	u2 := assignUniform(members[:2], topics, u)
	for _, id := range []string{"m1", "m2"} {
		for p := range u[id] {
			if !u2[id][p] {
				t.Fatalf("uniform moved %v away from %s", p, id)
			}
		}
	}
	r := assignRange(members[:2], topics)
	if len(r["m1"]) != 4 || len(r["m2"]) != 3 || !r["m1"][tpID{t1.ID, 0}] || !r["m1"][tpID{t1.ID, 2}] || !r["m2"][tpID{t1.ID, 3}] {
		t.Fatalf("range: %v", r)
	}
	// Heterogeneous subscriptions: only subscribers get a topic's partitions.
	het := assignUniform([]assignMember{{"m1", []string{"a"}}, {"m2", []string{"b"}}}, topics, nil)
	if len(het["m1"]) != 5 || len(het["m2"]) != 2 {
		t.Fatalf("heterogeneous: %v", het)
	}
}

// SubscribedTopicRegex matches whole topic names (as Kafka's RE2J matches()), internal
// topics included; the resolution follows topics created and deleted; an invalid
// pattern is INVALID_REGULAR_EXPRESSION.
func TestConsumerGroupRegexResolution(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("orders", 2)
	e.topics.add("orders-eu", 1)
	e.topics.add("old-orders", 1) // contains "orders" but does not match "orders.*"
	e.topics.add("__consumer_offsets", 1)
	heartbeat := func(m *cgMember, regex string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version = 1
		r.Group, r.MemberID, r.MemberEpoch = "g", m.id, m.epoch
		r.RebalanceTimeoutMillis = -1
		if m.epoch == 0 {
			r.RebalanceTimeoutMillis = 30000
			r.SubscribedTopicRegex = &regex
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp := e.c.ConsumerGroupHeartbeat(testClient, r)
		if resp.ErrorCode == 0 {
			m.epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				m.owned = map[[16]byte][]int32{}
				for _, t := range resp.Assignment.Topics {
					m.owned[t.TopicID] = t.Partitions
				}
			}
		}
		return resp
	}
	owned := func(m *cgMember) map[string]int {
		out := map[string]int{}
		for id, ps := range m.owned {
			ti, _ := e.topics.TopicByID(id)
			out[ti.Name] += len(ps)
		}
		return out
	}

	bad := &cgMember{id: "bad"}
	mustCode(t, "invalid regex", heartbeat(bad, "orders(").ErrorCode, kerr.InvalidRegularExpression.Code)

	m := &cgMember{id: "m"}
	mustCode(t, "join", heartbeat(m, "orders.*").ErrorCode, 0)
	if got := owned(m); len(got) != 2 || got["orders"] != 2 || got["orders-eu"] != 1 {
		t.Fatalf("orders.* resolved to %v, want orders:2 orders-eu:1", got)
	}
	e.topics.add("orders-us", 3)
	heartbeat(m, "")
	if got := owned(m); got["orders-us"] != 3 || len(got) != 3 {
		t.Fatalf("after creating orders-us: %v", got)
	}
	e.topics.remove("orders-eu")
	heartbeat(m, "")
	if got := owned(m); got["orders-eu"] != 0 || len(got) != 2 {
		t.Fatalf("after deleting orders-eu: %v", got)
	}

	// Another group: internal topics match too, as in Kafka.
	e = newEnv(t, Config{})
	e.topics.add("__consumer_offsets", 1)
	e.topics.add("data", 1)
	in := &cgMember{id: "internal"}
	mustCode(t, "join __.*", heartbeat(in, "__.*").ErrorCode, 0)
	if got := owned(in); got["__consumer_offsets"] != 1 || len(got) != 1 {
		t.Fatalf("__.* resolved to %v, want the internal topic (as Kafka)", got)
	}
}
