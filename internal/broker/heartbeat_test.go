package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member that stops heartbeating is removed after its session timeout and a live
// consumer then gets every partition.
func TestSilentMemberIsRemoved(t *testing.T) {
	props := groupProps()
	props["group.min.session.timeout.ms"] = "3000" // the silent member's session: short, the test waits for it
	tb := startTestBroker(t, testOptions{Props: props})
	createTestTopic(t, tb, "t", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := tb.client()
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
	join := func(memberID string) *kmsg.JoinGroupResponse {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.MemberID, r.ProtocolType = "g", memberID, "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 3000, 3000
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := join("")
	if first.ErrorCode != 79 {
		t.Fatalf("want MEMBER_ID_REQUIRED, got %d", first.ErrorCode)
	}
	j := join(first.MemberID)
	if j.ErrorCode != 0 || j.LeaderID != first.MemberID {
		t.Fatalf("join: %+v", j)
	}
	asg := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1, 2, 3}}}}
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.MemberID, s.Generation = "g", j.MemberID, j.Generation
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: asg.AppendTo(nil)}}
	if sr, err := s.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync: %v %+v", err, sr)
	}
	// The raw member now goes silent. A real consumer joins and must end up with all
	// four partitions once the silent member's session expires.
	produceN(t, cl, "t", 0, 40)
	seen := &consumedSet{seen: make(map[string]bool)}
	c := startGroupConsumer(t, tb, "g", "t", seen)
	waitFor(t, "all records by the live member", func() bool { return seen.len() >= 40 })
	c.stop()
}

// A static member that restarts within its session timeout gets its partitions back
// without a rebalance: the other member is never told to rejoin.
func TestStaticMemberRestart(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: groupProps()})
	createTestTopic(t, tb, "t", 4)
	produceN(t, tb.client(), "t", 0, 40)
	var assigned, lastCount atomic.Int32
	seen := &consumedSet{seen: make(map[string]bool)}
	dyn := startGroupConsumer(t, tb, "g", "t", seen, kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			assigned.Add(1)
			lastCount.Store(int32(len(m["t"])))
		}))
	st := startGroupConsumer(t, tb, "g", "t", seen, kgo.Balancers(kgo.RangeBalancer()), kgo.InstanceID("static-1"))
	waitFor(t, "all records", func() bool { return seen.len() >= 40 })
	waitForMembers(t, tb, "g", 2)
	waitFor(t, "the dynamic member's two-member assignment", func() bool { return lastCount.Load() == 2 })
	before := assigned.Load()
	st.stop() // a static member does not leave the group on close

	produceN(t, tb.client(), "t", 40, 40)
	st2 := startGroupConsumer(t, tb, "g", "t", seen, kgo.Balancers(kgo.RangeBalancer()), kgo.InstanceID("static-1"))
	waitFor(t, "records after the static member restarted", func() bool { return seen.len() >= 80 })
	if got := assigned.Load(); got != before {
		t.Fatalf("the dynamic member was reassigned %d times after the static restart: a rebalance happened", got-before)
	}
	st2.stop()
	dyn.stop()
}
