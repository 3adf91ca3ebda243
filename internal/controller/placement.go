package controller

import (
	"slices"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// Replica placement of new partitions (CreateTopics, CreatePartitions).
//
// Without broker.rack on any live broker, leaders go round the brokers in
// id order (starting at an offset that moves with every topic) and the other
// replicas follow the leader in that order, as Kafka's rack-unaware
// assignment does.
//
// When at least one live broker has a rack, placement stripes over racks as
// KRaft's replica placer does: brokers are grouped by rack (brokers without a
// rack form one group of their own, as in Kafka 4.x, which no longer refuses
// a cluster where only some brokers have racks), and each partition takes its
// replicas from consecutive racks, so a partition whose replication factor is
// at most the number of racks has every replica in a different rack. Leaders
// rotate over the racks and, within a rack, over its brokers; followers are
// shifted once every round over all brokers so that the same brokers do not
// always follow the same leader. Kafka's placer shuffles with a random seed;
// Sluice's is deterministic (racks in name order, brokers in id order), so an
// assignment can be predicted and tested.

// rackGroup is the live brokers of one rack, in id order.
type rackGroup struct {
	rack    string
	brokers []int32
}

// rackGroups groups live (id-sorted) brokers by rack, racks in name order
// (the no-rack group, "", first). ok is false when no broker has a rack.
func rackGroups(live []*metadata.BrokerRegistration) (groups []rackGroup, ok bool) {
	idx := map[string]int{}
	for _, b := range live {
		if b.Rack != "" {
			ok = true
		}
		i, seen := idx[b.Rack]
		if !seen {
			i = len(groups)
			idx[b.Rack] = i
			groups = append(groups, rackGroup{rack: b.Rack})
		}
		groups[i].brokers = append(groups[i].brokers, b.ID)
	}
	slices.SortFunc(groups, func(x, y rackGroup) int {
		switch {
		case x.rack < y.rack:
			return -1
		case x.rack > y.rack:
			return 1
		}
		return 0
	})
	for _, g := range groups {
		slices.Sort(g.brokers)
	}
	return groups, ok
}

// placeReplicas returns count replica lists of rf brokers each (leader
// first) over the live brokers, the first partition at rotation start.
// rf must not exceed len(live).
func placeReplicas(live []*metadata.BrokerRegistration, count int32, rf int16, start int) [][]int32 {
	ids := make([]int32, len(live))
	for i, b := range live {
		ids[i] = b.ID
	}
	slices.Sort(ids)
	n := len(ids)
	out := make([][]int32, count)
	groups, racked := rackGroups(live)
	if !racked {
		for p := range int(count) {
			reps := make([]int32, rf)
			for r := range int(rf) {
				reps[r] = ids[(start+p+r)%n]
			}
			out[p] = reps
		}
		return out
	}
	nr := len(groups)
	for p := range int(count) {
		k := start + p
		reps := make([]int32, 0, rf)
		used := map[int32]bool{}
		for j := range int(rf) {
			base := k/nr + j/nr
			if j > 0 {
				base += k / n // shift the followers once per round
			}
			// Rack (k+j) mod racks; a rack whose brokers are all taken
			// passes the turn to the next one.
			placed := false
			for dr := 0; dr < nr && !placed; dr++ {
				g := groups[(k+j+dr)%nr]
				for di := range len(g.brokers) {
					id := g.brokers[(base+di)%len(g.brokers)]
					if !used[id] {
						used[id] = true
						reps = append(reps, id)
						placed = true
						break
					}
				}
			}
		}
		out[p] = reps
	}
	return out
}
