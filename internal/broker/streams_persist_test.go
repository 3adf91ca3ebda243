package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A streams group survives a restart of its coordinator: the group epoch, the
// topology and every member's epoch, active and standby tasks come back from
// __consumer_offsets, and members heartbeating with their epoch keep their tasks.
func TestStreamsGroupSurvivesRestart(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"group.streams.num.standby.replicas": "1"}})
	dpTopic(t, tb, "words", 2, nil)
	a := &streamsMember{t: t, tb: tb, group: "wc", id: "member-a"}
	b := &streamsMember{t: t, tb: tb, group: "wc", id: "member-b"}
	a.heartbeat(streamsTopology(), false)
	b.heartbeat(streamsTopology(), false)
	a.heartbeat(nil, false)
	a.heartbeat(nil, true) // acknowledges the revocation
	b.heartbeat(nil, true)
	for _, m := range []*streamsMember{a, b} {
		if r := m.heartbeat(nil, true); r.ErrorCode != 0 || taskCount(m.owned) != 2 {
			t.Fatalf("%s before the restart: %+v", m.id, r)
		}
	}
	describe := func() string {
		d := kmsg.NewPtrStreamsGroupDescribeRequest()
		d.Groups = []string{"wc"}
		g := tb.request(d).(*kmsg.StreamsGroupDescribeResponse).Groups[0]
		if g.ErrorCode != 0 || g.Topology == nil {
			t.Fatalf("describe: %+v", g)
		}
		out := fmt.Sprintf("state %s epoch %d assignment epoch %d topology %d/%d;", g.State, g.Epoch, g.AssignmentEpoch,
			g.Topology.Epoch, len(g.Topology.Subtopologies))
		for _, m := range g.Members {
			out += fmt.Sprintf(" %s epoch %d process %s active %v standby %v target %v/%v;", m.MemberID, m.MemberEpoch, m.ProcessID,
				taskSet(m.Assignment.ActiveTasks), taskSet(m.Assignment.StandbyTasks),
				taskSet(m.TargetAssignment.ActiveTasks), taskSet(m.TargetAssignment.StandbyTasks))
		}
		return out
	}
	before := describe()
	epochs := map[string]int32{a.id: a.epoch, b.id: b.epoch}
	owned := map[string][]string{a.id: taskSet(a.owned), b.id: taskSet(b.owned)}

	tb.restart()
	if after := describe(); after != before {
		t.Fatalf("after the restart:\n %s\nbefore:\n %s", after, before)
	}
	for _, m := range []*streamsMember{a, b} {
		r := m.heartbeat(nil, true)
		if r.ErrorCode != 0 || m.epoch != epochs[m.id] || fmt.Sprint(taskSet(m.owned)) != fmt.Sprint(owned[m.id]) {
			t.Fatalf("%s after the restart: %+v (epoch %d, was %d; tasks %v, were %v)", m.id, r, m.epoch, epochs[m.id], taskSet(m.owned), owned[m.id])
		}
	}
	if after := describe(); after != before {
		t.Fatalf("after the heartbeats:\n %s\nbefore:\n %s", after, before)
	}
	// A member that leaves after the restart is removed for good.
	a.epoch = -1
	if r := a.heartbeat(nil, false); r.ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	tb.restart()
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"wc"}
	if g := tb.request(d).(*kmsg.StreamsGroupDescribeResponse).Groups[0]; len(g.Members) != 1 || g.Members[0].MemberID != b.id {
		t.Fatalf("after the leave and a restart: %+v", g.Members)
	}
}
