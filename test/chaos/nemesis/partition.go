package nemesis

import (
	"math/rand/v2"
	"sort"

	"github.com/sluice-broker/sluice/test/chaos/netns"
)

// Partition kinds.
const (
	// Isolate cuts the target node off from every other node.
	Isolate = "isolate"
	// Halves splits the nodes into a minority holding the target and a
	// majority (on three nodes the same as Isolate; on five, two and three).
	Halves = "halves"
	// Bridge splits the nodes into two sides, the target on one, and one
	// node of neither side that sees both (on three nodes: the target sees
	// only the bridge node, which sees both others).
	Bridge = "bridge"
	// Ring arranges the nodes in a ring: each sees its two neighbours only
	// (four nodes or more).
	Ring = "ring"
)

// PartitionKinds lists the kinds that make sense with n nodes.
func PartitionKinds(n int) []string {
	switch {
	case n < 3:
		return []string{Isolate}
	case n < 4:
		return []string{Isolate, Halves, Bridge}
	}
	return []string{Isolate, Halves, Bridge, Ring}
}

// Grudge returns the node pairs (1-based) a partition of kind cuts, on n
// nodes with the target node target; pick draws the other nodes' places.
func Grudge(kind string, n, target int, pick uint64) []netns.Pair {
	rng := rand.New(rand.NewPCG(pick, 0x9a9))
	var others []int
	for i := 1; i <= n; i++ {
		if i != target {
			others = append(others, i)
		}
	}
	rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	side := map[int]int{target: 0} // 0, 1, or 2 = sees both
	switch kind {
	case Halves:
		minority := (n - 1) / 2
		for i, o := range others {
			if i < minority-1 {
				side[o] = 0
			} else {
				side[o] = 1
			}
		}
	case Bridge:
		side[others[0]] = 2
		rest := others[1:]
		for i, o := range rest {
			// The target's side gets the smaller half.
			if i < (len(rest)+1)/2-1 {
				side[o] = 0
			} else {
				side[o] = 1
			}
		}
	case Ring:
		ring := append([]int{target}, others...)
		near := map[[2]int]bool{}
		for i := range ring {
			a, b := ring[i], ring[(i+1)%len(ring)]
			near[[2]int{min(a, b), max(a, b)}] = true
		}
		var out []netns.Pair
		for a := 1; a <= n; a++ {
			for b := a + 1; b <= n; b++ {
				if !near[[2]int{a, b}] {
					out = append(out, netns.Pair{A: a, B: b})
				}
			}
		}
		return out
	default: // Isolate
		for _, o := range others {
			side[o] = 1
		}
	}
	var out []netns.Pair
	for a := 1; a <= n; a++ {
		for b := a + 1; b <= n; b++ {
			if side[a] != 2 && side[b] != 2 && side[a] != side[b] {
				out = append(out, netns.Pair{A: a, B: b})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].A < out[j].A || out[i].A == out[j].A && out[i].B < out[j].B })
	return out
}

// NetemParams draws a netem fault's delay, jitter (ms) and loss (percent).
func NetemParams(pick uint64) (delayMs, jitterMs int, lossPct float64) {
	rng := rand.New(rand.NewPCG(pick, 0x7e7))
	delayMs = 20 + rng.IntN(280)
	jitterMs = delayMs / 4
	lossPct = float64(rng.IntN(200)) / 10
	return
}

// LossyPct draws a lossy link's drop rate: 2 to 30 percent of the packets,
// each direction.
func LossyPct(pick uint64) int {
	return 2 + int(pick%29)
}

// SlowRate draws a slow link's rate in kbit/s: 64 kbit/s to 2 Mbit/s, each
// direction (the workloads' writes alone need a few hundred kbit/s).
func SlowRate(pick uint64) int {
	return 64 << (pick % 6)
}
