package replica

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Replicated lists the partitions with more than one replica, following
// reassignments that grow or shrink the replica set and removals.
func TestReplicatedFollowsReplicaSets(t *testing.T) {
	lm, err := log.OpenManager(vfs.NewMemFS(), "/data", log.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	logs := make([]*log.Log, 3)
	for i := range logs {
		if logs[i], err = lm.Create("t", int32(i), log.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	m := NewManager(1)
	names := func() map[int32]bool {
		out := map[int32]bool{}
		for _, p := range m.Replicated() {
			out[p.Index()] = true
		}
		return out
	}
	apply := func(i int, epoch int32, replicas ...int32) {
		t.Helper()
		if _, err := m.Apply(logs[i], State{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: replicas, ISR: []int32{1}}); err != nil {
			t.Fatal(err)
		}
	}
	apply(0, 1, 1)
	apply(1, 1, 1, 2)
	apply(2, 1, 1, 2, 3)
	if got := names(); len(got) != 2 || !got[1] || !got[2] {
		t.Fatalf("replicated %v, want partitions 1 and 2", got)
	}
	apply(0, 2, 1, 2) // grows
	apply(1, 2, 1)    // shrinks
	m.Remove("t", 2)
	if got := names(); len(got) != 1 || !got[0] {
		t.Fatalf("after the changes: replicated %v, want partition 0", got)
	}
	if n := len(m.Partitions()); n != 2 {
		t.Fatalf("%d partitions, want 2", n)
	}
}
