package replica

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// The low watermark is the smallest log start offset over the leader and
// its live followers; a live follower not heard from holds it at -1, a dead
// one does not count; WaitLowWatermark waits for it and times out.
func TestLowWatermark(t *testing.T) {
	m := NewManager(1)
	l := newLog(t)
	p, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	live := map[int32]bool{1: true, 2: true, 3: true}
	isLive := func(r int32) bool { return live[r] }
	if lw := p.LowWatermark(isLive); lw != -1 {
		t.Fatalf("followers not heard from: low watermark %d, want -1", lw)
	}
	p.NoteReplicaLogStart(2, 0)
	p.NoteReplicaLogStart(3, 0)
	if lw := p.LowWatermark(isLive); lw != 0 {
		t.Fatalf("low watermark %d, want 0", lw)
	}
	// Fetching at the end makes the high watermark 4, so DeleteRecords may
	// move the leader's start to 3.
	for _, r := range []int32{2, 3} {
		if _, err := p.ReadForReplica(r, 4, 1<<20, true, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.DeleteRecords(3); err != nil {
		t.Fatal(err)
	}
	p.NoteReplicaLogStart(2, 3)
	if lw := p.LowWatermark(isLive); lw != 0 {
		t.Fatalf("replica 3 still at 0: low watermark %d", lw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.WaitLowWatermark(ctx, 3, isLive); codeOf(err) != kerr.RequestTimedOut.Code {
		t.Fatalf("wait with a live replica behind: %v, want REQUEST_TIMED_OUT", err)
	}
	live[3] = false // fenced: it no longer counts
	if lw, err := p.WaitLowWatermark(context.Background(), 3, isLive); err != nil || lw != 3 {
		t.Fatalf("wait after replica 3 died: %d %v, want 3", lw, err)
	}
}
