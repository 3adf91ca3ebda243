package group

import "sort"

// Server-side assignors of the KIP-848 consumer protocol (group.consumer.assignors).
const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

// tpID names a partition by topic id, as the consumer protocol does.
type tpID struct {
	id [16]byte
	p  int32
}

type partitionSet map[tpID]bool

// assignMember is one member's input to an assignor.
type assignMember struct {
	id     string
	topics []string // subscribed topics that exist, sorted
}

// assign runs the named assignor. members are sorted by id; topics maps every
// subscribed existing topic to its facts; prev is the previous target assignment
// (assignors keep partitions where they were when that stays balanced).
func assign(name string, members []assignMember, topics map[string]TopicInfo, prev map[string]partitionSet) map[string]partitionSet {
	if name == assignorRange {
		return assignRange(members, topics)
	}
	return assignUniform(members, topics, prev)
}

// assignRange gives each member, topic by topic, a contiguous range of partitions: the
// first partitions%members members (by member id) get one extra.
func assignRange(members []assignMember, topics map[string]TopicInfo) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	for _, m := range members {
		out[m.id] = make(partitionSet)
	}
	for _, name := range sortedTopicNames(topics) {
		t := topics[name]
		var subs []string
		for _, m := range members {
			if contains(m.topics, name) {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		per, extra := int(t.Partitions)/len(subs), int(t.Partitions)%len(subs)
		next := int32(0)
		for i, id := range subs {
			n := per
			if i < extra {
				n++
			}
			for j := 0; j < n; j++ {
				out[id][tpID{t.ID, next}] = true
				next++
			}
		}
	}
	return out
}

// assignUniform spreads partitions evenly over members, keeping each partition with
// its previous owner where balance allows (sticky). With identical subscriptions the
// result is exactly balanced (counts differ by at most one); with different
// subscriptions each partition goes to the least-loaded subscribed member.
func assignUniform(members []assignMember, topics map[string]TopicInfo, prev map[string]partitionSet) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	count := make(map[string]int, len(members))
	for _, m := range members {
		out[m.id] = make(partitionSet)
	}
	if len(members) == 0 {
		return out
	}
	subscribers := make(map[string][]string) // topic -> member ids (sorted)
	for _, m := range members {
		for _, t := range m.topics {
			subscribers[t] = append(subscribers[t], m.id)
		}
	}
	var all []tpID
	topicOf := make(map[[16]byte]string)
	for _, name := range sortedTopicNames(topics) {
		if len(subscribers[name]) == 0 {
			continue
		}
		t := topics[name]
		topicOf[t.ID] = name
		for p := int32(0); p < t.Partitions; p++ {
			all = append(all, tpID{t.ID, p})
		}
	}
	owned := make(map[tpID]bool, len(all))
	give := func(id string, p tpID) {
		out[id][p] = true
		owned[p] = true
		count[id]++
	}
	prevOwner := make(map[tpID]string)
	for id, ps := range prev {
		for p := range ps {
			prevOwner[p] = id
		}
	}
	subscribed := func(id string, p tpID) bool {
		name, ok := topicOf[p.id]
		return ok && contains(subscribers[name], id)
	}

	homogeneous := true
	for _, m := range members[1:] {
		if !equalStrings(m.topics, members[0].topics) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		minQ, extra := len(all)/len(members), len(all)%len(members)
		for _, p := range all { // keep previous owners up to the minimum quota
			if id, ok := prevOwner[p]; ok && out[id] != nil && count[id] < minQ && subscribed(id, p) {
				give(id, p)
			}
		}
		for _, p := range all { // and the extra slots
			if id, ok := prevOwner[p]; ok && !owned[p] && out[id] != nil && count[id] == minQ && extra > 0 && subscribed(id, p) {
				give(id, p)
				extra--
			}
		}
	} else {
		for _, p := range all {
			id, ok := prevOwner[p]
			if !ok || out[id] == nil || !subscribed(id, p) {
				continue
			}
			if count[id] <= leastCount(subscribers[topicOf[p.id]], count) {
				give(id, p)
			}
		}
	}
	for _, p := range all {
		if owned[p] {
			continue
		}
		best := ""
		for _, id := range subscribers[topicOf[p.id]] {
			if best == "" || count[id] < count[best] {
				best = id
			}
		}
		give(best, p)
	}
	return out
}

func leastCount(ids []string, count map[string]int) int {
	least := -1
	for _, id := range ids {
		if least < 0 || count[id] < least {
			least = count[id]
		}
	}
	return least
}

func sortedTopicNames(topics map[string]TopicInfo) []string {
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
