package replica

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/log"
)

// KIP-966's high-watermark rule: with MinISR set, the leader's high
// watermark stays where it is while the in-sync set is smaller, even when
// the leader alone is in sync; it moves again once the set is large
// enough. Without MinISR (the feature off) a lone leader's high watermark
// follows its log end, as before.
func TestHighWatermarkHeldBelowMinISR(t *testing.T) {
	m := NewManager(1)
	l := newLog(t)
	reps := []int32{1, 2, 3}
	st := State{Leader: 1, LeaderEpoch: 1, Replicas: reps, ISR: reps, MinISR: 2}
	p, err := m.Apply(l, st)
	if err != nil {
		t.Fatal(err)
	}
	appendN := func(n int) {
		t.Helper()
		for range n {
			if _, err := p.AppendAsLeader(oneRecord(t), log.AppendOptions{}, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	fetch := func(r int32, off int64) {
		t.Helper()
		if _, err := p.ReadForReplica(r, off, 1<<20, true, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	appendN(2)
	fetch(2, 2)
	fetch(3, 2)
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("three in sync at 2: hw %d", hw)
	}
	// Replica 3 leaves: two in sync, still min.insync.replicas.
	st.PartitionEpoch, st.ISR = 1, []int32{1, 2}
	if _, err := m.Apply(l, st); err != nil {
		t.Fatal(err)
	}
	appendN(1)
	fetch(2, 3)
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("two in sync (min 2) at 3: hw %d", hw)
	}
	// Replica 2 leaves too: the leader alone, below MinISR. Appends (acks=1)
	// do not move the high watermark, and neither does a fetch by an
	// out-of-sync replica.
	st.PartitionEpoch, st.ISR = 2, []int32{1}
	if _, err := m.Apply(l, st); err != nil {
		t.Fatal(err)
	}
	appendN(2)
	fetch(3, 5)
	if hw, leo := p.HighWatermark(), p.LogEndOffset(); hw != 3 || leo != 5 {
		t.Fatalf("leader alone below min.insync.replicas: hw %d leo %d, want hw 3 leo 5", hw, leo)
	}
	// Replica 3 rejoins: two in sync again, the high watermark moves to
	// what both hold.
	st.PartitionEpoch, st.ISR = 3, []int32{1, 3}
	if _, err := m.Apply(l, st); err != nil {
		t.Fatal(err)
	}
	fetch(3, 5)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("back to min.insync.replicas: hw %d, want 5", hw)
	}
	// The same lone leader without the rule: the high watermark follows
	// the end.
	st.PartitionEpoch, st.ISR, st.MinISR = 4, []int32{1}, 0
	if _, err := m.Apply(l, st); err != nil {
		t.Fatal(err)
	}
	appendN(1)
	if hw := p.HighWatermark(); hw != 6 {
		t.Fatalf("lone leader without the rule: hw %d, want 6", hw)
	}
	// Turning the rule on holds it where it is.
	st.PartitionEpoch, st.MinISR = 5, 2
	if _, err := m.Apply(l, st); err != nil {
		t.Fatal(err)
	}
	appendN(1)
	if hw, leo := p.HighWatermark(), p.LogEndOffset(); hw != 6 || leo != 7 {
		t.Fatalf("rule turned on for a lone leader: hw %d leo %d, want 6 and 7", hw, leo)
	}
}
