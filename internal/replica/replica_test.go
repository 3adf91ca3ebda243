package replica

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

func newLog(t *testing.T) *log.Log {
	t.Helper()
	m, err := log.OpenManager(vfs.NewMemFS(), "/data", log.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	l, err := m.Create("t", 0, log.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// oneRecord is a valid v2 batch with one keyed record.
func oneRecord(t *testing.T) []byte {
	t.Helper()
	return batch.NewBatch(0, 1, batch.KV{Key: []byte("k"), Value: []byte("v")})
}

func TestRolesAndEpochChecks(t *testing.T) {
	var events []Event
	m := NewManager(1)
	m.Listen(func(e Event) error { events = append(events, e); return nil })
	l := newLog(t)
	p, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Role() != Leader || len(events) != 1 || events[0].Kind != BecameLeader {
		t.Fatalf("role %v events %v", p.Role(), events)
	}
	for _, c := range []struct {
		epoch int32
		want  int16
	}{{-1, 0}, {3, 0}, {4, kerr.UnknownLeaderEpoch.Code}, {2, kerr.FencedLeaderEpoch.Code}} {
		if got := p.CheckLeader(c.epoch); got != c.want {
			t.Fatalf("CheckLeader(%d) = %d, want %d", c.epoch, got, c.want)
		}
	}
	// acks=all needs min.insync.replicas in the in-sync set, checked before writing.
	if _, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 3); codeOf(err) != kerr.NotEnoughReplicas.Code || l.LogEndOffset() != 0 {
		t.Fatalf("min.insync.replicas=3 with 2 in sync: %v, leo %d", err, l.LogEndOffset())
	}
	if _, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{LeaderEpoch: 99}, 2); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.EndOffsetForLeaderEpoch(3); e != 3 || l.LatestEpoch() != 3 {
		t.Fatalf("batch written in epoch %d, want the partition's 3", l.LatestEpoch())
	}
	// Two in-sync replicas: the high watermark waits for the follower.
	if p.HighWatermark() != 0 || p.LogEndOffset() != 1 {
		t.Fatalf("hw %d leo %d", p.HighWatermark(), p.LogEndOffset())
	}
	// Stale metadata is refused and changes nothing.
	if _, err := m.Apply(l, State{Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}); err == nil || p.LeaderEpoch() != 3 {
		t.Fatalf("stale state applied: %v, epoch %d", err, p.LeaderEpoch())
	}
	// Leadership moves to broker 2: this broker follows, produce is refused.
	if _, err := m.Apply(l, State{Leader: 2, LeaderEpoch: 4, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if p.Role() != Follower || events[len(events)-1].Kind != BecameFollower {
		t.Fatalf("role %v events %v", p.Role(), events)
	}
	if code := p.CheckLeader(4); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower answered %d", code)
	}
	if _, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 0); codeOf(err) != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower appended: %v", err)
	}
	if _, err := p.DeleteRecords(-1); codeOf(err) != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower deleted records: %v", err)
	}
	// Back as sole in-sync leader: the high watermark follows the end.
	if _, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 1 {
		t.Fatalf("sole in-sync leader: hw %d", p.HighWatermark())
	}
	if got := p.State(); got.Leader != 1 || got.LeaderEpoch != 5 || len(got.ISR) != 1 {
		t.Fatalf("state %+v", got)
	}
	if ep, end := p.EndOffsetForLeaderEpoch(5); ep != 5 || end != 1 {
		t.Fatalf("current epoch ends at the log end: %d %d", ep, end)
	}
	m.Remove("t", 0)
	if m.Get("t", 0) != nil || events[len(events)-1].Kind != Removed {
		t.Fatalf("removed partition still there, events %v", events)
	}
}

func TestApplyRefusesInconsistentState(t *testing.T) {
	m := NewManager(1)
	l := newLog(t)
	for _, st := range []State{
		{Leader: 3, Replicas: []int32{1, 2}, ISR: []int32{1}},
		{Leader: 1, Replicas: []int32{1}, ISR: []int32{1, 2}},
		{Leader: 1, LeaderEpoch: -1, Replicas: []int32{1}, ISR: []int32{1}},
	} {
		if _, err := m.Apply(l, st); err == nil {
			t.Fatalf("accepted %+v", st)
		}
	}
	if m.Get("t", 0) != nil {
		t.Fatal("a refused state created the partition")
	}
	m.Listen(func(Event) error { return errors.New("cannot load") })
	if _, err := m.Apply(l, State{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}); err == nil || m.Get("t", 0) == nil {
		t.Fatalf("listener error not returned (%v) or state not applied", err)
	}
}

func codeOf(err error) int16 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var kc interface{ KafkaCode() int16 }
	if errors.As(err, &kc) {
		return kc.KafkaCode()
	}
	return -1
}
