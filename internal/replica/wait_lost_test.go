package replica

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// An acks=all produce waiting on a leader that loses its leadership while
// the followers have not yet fetched its records is answered
// NOT_LEADER_OR_FOLLOWER, never success, even if the old leader's high
// watermark passes the records afterwards (issue #12: the new leader may
// not have them).
func TestWaitReplicatedLeadershipLost(t *testing.T) {
	l := newLog(t)
	m := NewManager(1)
	p, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { done <- p.WaitReplicated(ctx, 1, res.LastOffset+1, 2) }()
	if _, err := m.Apply(l, State{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}}); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(res.LastOffset + 1) // as a follower taking the new leader's, after the change
	select {
	case err := <-done:
		if codeOf(err) != kerr.NotLeaderForPartition.Code {
			t.Fatalf("wait after the leadership moved: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an acks=all produce still waits 30 s after its leader lost the leadership")
	}
}
