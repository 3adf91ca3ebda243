package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// Finding 14 of docs/reliability.md: between the moment a partition's new
// state (this broker leads) is stored and the moment its leadership view
// is set up, ListOffsets must not take the high watermark as known: a
// fresh partition's high watermark is then the log start (0), not the
// previous leader's.
func TestHighWatermarkUnknownBeforeLeadershipIsSetUp(t *testing.T) {
	l := newLog(t)
	for range 3 {
		if _, err := l.Append(oneRecord(t), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l.ForgetHighWatermark()
	for _, epoch := range []int32{0, 4} {
		p := &Partition{topic: "t", index: 0, self: 1, log: l}
		p.st.Store(&State{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
		if p.HighWatermarkKnown() {
			t.Fatalf("epoch %d: high watermark %d taken as known before the leadership was set up", epoch, p.HighWatermark())
		}
	}
}

// A broker whose session with the controller lapsed stops acting as the
// leader of partitions with other replicas, and keeps leading those it
// alone holds.
func TestLeaseLapsedStopsLeading(t *testing.T) {
	m := NewManager(1)
	lapsed := false
	m.SetLeaseCheck(func() bool { return lapsed })
	rep, err := m.Apply(newLog(t), State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	m2 := NewManager(1) // the same topic-partition name in newLog
	m2.SetLeaseCheck(func() bool { return lapsed })
	lone, err := m2.Apply(newLog(t), State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.CheckLeader(-1); c != 0 {
		t.Fatalf("CheckLeader with a live session: %d", c)
	}
	lapsed = true
	if c := rep.CheckLeader(-1); c != kerr.NotLeaderForPartition.Code {
		t.Fatalf("CheckLeader with a lapsed session: %d, want NOT_LEADER_OR_FOLLOWER", c)
	}
	if _, err := rep.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 0); err == nil {
		t.Fatal("append accepted with a lapsed session")
	}
	if c := lone.CheckLeader(-1); c != 0 {
		t.Fatalf("a partition without other replicas, lapsed session: %d, want 0", c)
	}
	lapsed = false
	if c := rep.CheckLeader(-1); c != 0 {
		t.Fatalf("CheckLeader after the session was renewed: %d", c)
	}
}
