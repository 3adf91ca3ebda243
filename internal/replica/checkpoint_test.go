package replica

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// A partition first applied after SetCheckpoint starts from its
// checkpointed high watermark (capped at its log end), not the log start.
func TestCheckpointedHighWatermark(t *testing.T) {
	l := newLog(t)
	for range 5 {
		if _, err := l.Append(oneRecord(t), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m := NewManager(2)
	m.SetCheckpoint(log.OffsetsOf(map[log.TopicPartition]int64{{Topic: "t", Partition: 0}: 3}))
	p, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("follower high watermark after start %d, want the checkpointed 3", hw)
	}
	if got := m.HighWatermarks().Map()[log.TopicPartition{Topic: "t", Partition: 0}]; got != 3 {
		t.Fatalf("HighWatermarks: %d", got)
	}

	// Capped at the log end; without a checkpoint the log start.
	l2 := newLog(t)
	m2 := NewManager(2)
	m2.SetCheckpoint(log.OffsetsOf(map[log.TopicPartition]int64{{Topic: "t", Partition: 0}: 99}))
	if _, err := l2.Append(oneRecord(t), log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	p2, _ := m2.Apply(l2, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if hw := p2.HighWatermark(); hw != 1 {
		t.Fatalf("checkpoint above the log end: high watermark %d, want 1", hw)
	}
}

// A new leader's high watermark is "known" (ListOffsets answers) once it
// reaches the start of its leader epoch.
func TestHighWatermarkKnown(t *testing.T) {
	l := newLog(t)
	for range 4 {
		if _, err := l.Append(oneRecord(t), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m := NewManager(1)
	m.SetCheckpoint(log.OffsetsOf(map[log.TopicPartition]int64{{Topic: "t", Partition: 0}: 2}))
	p, err := m.Apply(l, State{Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 2 || p.HighWatermarkKnown() {
		t.Fatalf("new leader: high watermark %d known %v, want 2 and not known (epoch starts at 4)", p.HighWatermark(), p.HighWatermarkKnown())
	}
	p.recordFollower(p.st.Load(), 2, 4, time.Now())
	if p.HighWatermark() != 4 || !p.HighWatermarkKnown() {
		t.Fatalf("after the follower caught up: high watermark %d known %v", p.HighWatermark(), p.HighWatermarkKnown())
	}
}

// A partition removed from this broker (reassigned away, topic deleted)
// answers a waiting acks=all produce NOT_LEADER_OR_FOLLOWER at once, not
// after its timeout.
func TestRemovedPartitionEndsWaits(t *testing.T) {
	l := newLog(t)
	m := NewManager(1)
	p, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
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
	m.Remove("t", 0)
	select {
	case err := <-done:
		if codeOf(err) != kerr.NotLeaderForPartition.Code {
			t.Fatalf("wait after removal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a removed partition keeps an acks=all produce waiting")
	}
	if _, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 0); codeOf(err) != kerr.NotLeaderForPartition.Code {
		t.Fatalf("append after removal: %v", err)
	}
}
