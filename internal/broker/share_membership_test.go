package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share-group membership is written to __consumer_offsets in Kafka's
// share-group records: after a restart the group, its epochs, members and
// assignments are back, members heartbeat on with their epochs, and a left
// and deleted group stays gone.
func TestShareMembershipSurvivesRestart(t *testing.T) {
	tb := shareTestBroker(t, nil)
	shareProduceN(t, tb, "q", 2, 0)
	r1 := shareHeartbeat(t, tb, "sg", "m1", 0, "q")
	r2 := shareHeartbeat(t, tb, "sg", "m2", 0, "q")
	r1 = shareHeartbeat(t, tb, "sg", "m1", r1.MemberEpoch)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 {
		t.Fatalf("joins: %+v %+v", r1, r2)
	}
	describe := func() string {
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.GroupIDs = []string{"sg"}
		g := tb.request(d).(*kmsg.ShareGroupDescribeResponse).Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("describe: %+v", g)
		}
		out := fmt.Sprintf("epoch %d assignment epoch %d state %s;", g.GroupEpoch, g.AssignmentEpoch, g.GroupState)
		for _, m := range g.Members {
			out += fmt.Sprintf(" %s epoch %d client %s topics %v assignment %+v;", m.MemberID, m.MemberEpoch, m.ClientID,
				m.SubscribedTopicNames, m.Assignment.TopicPartitions)
		}
		return out
	}
	before := describe()
	tb.restart()
	if after := describe(); after != before {
		t.Fatalf("after the restart:\n %s\nbefore:\n %s", after, before)
	}
	for _, m := range []struct {
		id    string
		epoch int32
	}{{"m1", r1.MemberEpoch}, {"m2", r2.MemberEpoch}} {
		if r := shareHeartbeat(t, tb, "sg", m.id, m.epoch); r.ErrorCode != 0 || r.MemberEpoch != m.epoch {
			t.Fatalf("%s heartbeats after the restart: %+v", m.id, r)
		}
	}

	// A member that leaves is gone after a restart; so is a deleted group.
	if r := shareHeartbeat(t, tb, "sg", "m2", -1); r.ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	tb.restart()
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"sg"}
	if g := tb.request(d).(*kmsg.ShareGroupDescribeResponse).Groups[0]; len(g.Members) != 1 || g.Members[0].MemberID != "m1" {
		t.Fatalf("after the leave and a restart: %+v", g.Members)
	}
	if r := shareHeartbeat(t, tb, "sg", "m1", -1); r.ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"sg"}
	if r := tb.request(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	tb.restart()
	if g := tb.request(d).(*kmsg.ShareGroupDescribeResponse).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after a restart: %+v", g)
	}
}
