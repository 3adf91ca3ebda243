package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sluice-broker/sluice/internal/metadata"
)

func brokersWithRacks(racks ...string) []*metadata.BrokerRegistration {
	var out []*metadata.BrokerRegistration
	for i, r := range racks {
		out = append(out, &metadata.BrokerRegistration{ID: int32(i + 1), Rack: r})
	}
	return out
}

// Without racks, placement is the rack-unaware round robin.
func TestPlaceReplicasNoRacks(t *testing.T) {
	got := placeReplicas(brokersWithRacks("", "", ""), 4, 2, 1)
	want := [][]int32{{2, 3}, {3, 1}, {1, 2}, {2, 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// 3 racks × 2 brokers: every partition of replication factor 3 has one
// replica per rack; leaders and replicas are spread evenly.
func TestPlaceReplicasRacks(t *testing.T) {
	live := brokersWithRacks("a", "b", "c", "a", "b", "c")
	rackOf := map[int32]string{}
	for _, b := range live {
		rackOf[b.ID] = b.Rack
	}
	for _, start := range []int{0, 5} {
		parts := placeReplicas(live, 12, 3, start)
		leaders, replicas := map[int32]int{}, map[int32]int{}
		followers := map[string]bool{}
		for p, reps := range parts {
			if len(reps) != 3 {
				t.Fatalf("partition %d: %v", p, reps)
			}
			racks := map[string]bool{}
			for _, r := range reps {
				racks[rackOf[r]] = true
				replicas[r]++
			}
			if len(racks) != 3 {
				t.Fatalf("start %d partition %d: replicas %v are not in 3 racks", start, p, reps)
			}
			leaders[reps[0]]++
			followers[fmt.Sprint(reps)] = true
		}
		for id := int32(1); id <= 6; id++ {
			if leaders[id] != 2 || replicas[id] != 6 {
				t.Fatalf("start %d: broker %d leads %d and holds %d replicas (want 2 and 6): %v", start, id, leaders[id], replicas[id], parts)
			}
		}
		if len(followers) != 12 {
			t.Fatalf("start %d: only %d distinct replica lists in 12 partitions: %v", start, len(followers), parts)
		}
	}
}

// More replicas than racks: every rack is used, no broker twice; brokers
// without a rack form a group of their own (Kafka 4.x accepts that).
func TestPlaceReplicasUneven(t *testing.T) {
	for _, tt := range []struct {
		racks []string
		rf    int16
	}{
		{[]string{"a", "b", "a", "b", "a"}, 3},
		{[]string{"a", "b", "b", "b"}, 4},
		{[]string{"a", "", "b", ""}, 3},
		{[]string{"x", "y", "z"}, 1},
	} {
		live := brokersWithRacks(tt.racks...)
		nracks := map[string]bool{}
		for _, r := range tt.racks {
			nracks[r] = true
		}
		for p, reps := range placeReplicas(live, 7, tt.rf, 3) {
			if len(reps) != int(tt.rf) {
				t.Fatalf("%v rf %d partition %d: %v", tt.racks, tt.rf, p, reps)
			}
			seen := map[string]bool{}
			for i, r := range reps {
				if slices.Contains(reps[:i], r) {
					t.Fatalf("%v partition %d: broker %d twice in %v", tt.racks, p, r, reps)
				}
				seen[tt.racks[r-1]] = true
			}
			if want := min(int(tt.rf), len(nracks)); len(seen) != want {
				t.Fatalf("%v rf %d partition %d: %v spans %d racks, want %d", tt.racks, tt.rf, p, reps, len(seen), want)
			}
		}
	}
}

// Through the controller: six brokers in three racks register; a new
// topic's and its added partitions' replicas each span the three racks.
func TestControllerRackAwarePlacement(t *testing.T) {
	e := newEnv(t)
	for _, m := range e.m {
		m.ctrl.cfg.MaxReplicationFactor = 16
	}
	ctx := context.Background()
	_, l := e.active()
	rackOf := map[int32]string{}
	for b := int32(1); b <= 6; b++ {
		rackOf[b] = string(rune('a' + (b-1)%3))
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i", Rack: rackOf[b]}})
		if err != nil {
			t.Fatalf("register %d: %v", b, err)
		}
		if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(parts []metadata.Partition) {
		t.Helper()
		for i, p := range parts {
			racks := map[string]bool{}
			for _, r := range p.Replicas {
				racks[rackOf[r]] = true
			}
			if len(p.Replicas) != 3 || len(racks) != 3 || p.Leader != p.Replicas[0] {
				t.Fatalf("partition %d: replicas %v leader %d (racks %v)", i, p.Replicas, p.Leader, racks)
			}
		}
	}
	tr, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "racked", Partitions: 6, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	check(tr.Partitions)
	if _, err := l.ctrl.CreatePartitions(ctx, CreatePartitionsRequest{Name: "racked", Count: 9}); err != nil {
		t.Fatal(err)
	}
	e.until("the new partitions", func() bool { return len(l.store.Image().Topics["racked"].Partitions) == 9 })
	check(l.store.Image().Topics["racked"].Partitions)
}
