package controller

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// maintainELR's shortcuts for a broker returning as the only eligible
// replica or as the last known leader give what the general rules give, over random partitions and
// changes (most of them not of that shape, many of them of it).
func TestMaintainELRShortcutMatchesRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	subset := func(of []int32) []int32 {
		var out []int32
		for _, r := range of {
			if rng.IntN(2) == 0 {
				out = append(out, r)
			}
		}
		return out
	}
	pick := func(of []int32) int32 {
		if len(of) == 0 || rng.IntN(3) == 0 {
			return metadata.NoLeader
		}
		return of[rng.IntN(len(of))]
	}
	fromELR, fromLKE := 0, 0
	for i := 0; i < 200_000; i++ {
		replicas := []int32{1, 2, 3}[:1+rng.IntN(3)]
		rng.Shuffle(len(replicas), func(a, b int) { replicas[a], replicas[b] = replicas[b], replicas[a] })
		var p metadata.Partition
		switch r := int32(1 + rng.IntN(4)); rng.IntN(3) {
		case 0:
			// A shape: leaderless, no in-sync replica, one eligible.
			p = metadata.Partition{Replicas: replicas, Leader: metadata.NoLeader, ELR: []int32{r}, LeaderEpoch: 5}
			if rng.IntN(4) == 0 {
				p.LastKnownELR = subset(replicas)
			}
		case 1:
			// The other: leaderless, neither in-sync nor eligible
			// replicas, one last known.
			p = metadata.Partition{Replicas: replicas, Leader: metadata.NoLeader, LastKnownELR: []int32{r}, LeaderEpoch: 5}
			if rng.IntN(4) == 0 {
				p.ELR = subset(replicas)
			}
		default:
			p = metadata.Partition{Replicas: replicas, ISR: subset(replicas), ELR: subset(replicas),
				LastKnownELR: subset(replicas), LeaderEpoch: 5}
			p.Leader = pick(p.ISR)
		}
		np := p
		np.PartitionEpoch++
		if rng.IntN(4) == 0 {
			np.ISR = subset(replicas)
			np.Leader = pick(replicas)
		}
		if rng.IntN(4) == 0 {
			np.ELR = subset(replicas)
		}
		if rng.IntN(5) == 0 {
			np.LeaderEpoch++
		}
		liveSet, crashedSet := subset([]int32{1, 2, 3, 4}), subset([]int32{1, 2, 3, 4})
		if rng.IntN(2) == 0 {
			crashedSet = nil
		}
		live := func(id int32) bool { return slices.Contains(liveSet, id) }
		crashed := func(id int32) bool { return slices.Contains(crashedSet, id) }
		minISR := rng.IntN(4)
		got := maintainELR(p, np, minISR, live, crashed)
		want := maintainELRAll(p, np, minISR, live, crashed)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("p %+v np %+v minISR %d live %v crashed %v:\nshortcut %+v\nrules    %+v", p, np, minISR, liveSet, crashedSet, got, want)
		}
		if got.Leader != metadata.NoLeader && p.Leader == metadata.NoLeader && len(p.ISR) == 0 {
			if len(p.ELR) == 1 {
				fromELR++
			} else if len(p.ELR) == 0 && len(p.LastKnownELR) == 1 {
				fromLKE++
			}
		}
	}
	if fromELR < 10_000 || fromLKE < 10_000 {
		t.Fatalf("only %d and %d elections of the shortcuts' shapes", fromELR, fromLKE)
	}
}
