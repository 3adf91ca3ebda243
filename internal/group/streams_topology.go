package group

import (
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsSubtopology is one subtopology of a Kafka Streams application as
// StreamsGroupHeartbeat sends it (KIP-1071).
type StreamsSubtopology = kmsg.StreamsGroupHeartbeatRequestTopologySubtopology

// StreamsInternalTopic is an internal topic (repartition or changelog) a
// streams group needs, with the partition count the topology resolves to.
type StreamsInternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // -1: the broker's default
	Configs           map[string]string
}

// StreamsPlan is a topology resolved against the existing topics: the
// number of tasks of every subtopology, the internal topics the group needs
// (existing or not), the source topics that are missing, and the internal
// topics whose partition count cannot be derived yet.
type StreamsPlan struct {
	Tasks      map[string]int32 // by subtopology id; absent: unknown
	Internal   []StreamsInternalTopic
	Missing    []string // source topics that do not exist (or regexes matching none)
	Unresolved []string // internal topics whose partitions depend on missing topics
	// Incorrect lists topics that are not partitioned as the topology
	// needs: copartitioned topics with different partition counts, or an
	// existing changelog with another count than its subtopology's tasks.
	Incorrect []string
}

// ResolveStreamsTopology derives the task counts and internal topics of a
// topology as Kafka's streams group coordinator does: a subtopology has as
// many tasks as its largest source topic (user or repartition) has
// partitions; a repartition topic without a fixed count gets the task count
// of the largest subtopology writing to it; a changelog topic without one
// gets its subtopology's task count. Copartitioned topics (a join's
// inputs) must agree: repartition topics of a copartition group without a
// fixed count take the count of its user topics (or the largest count among
// them when it has none), and user topics with different counts are
// reported as incorrectly partitioned.
func ResolveStreamsTopology(subs []StreamsSubtopology, topics Topics) StreamsPlan {
	plan := StreamsPlan{Tasks: map[string]int32{}}
	if topics == nil {
		return plan
	}
	known := map[string]int32{}
	repartition := map[string]kmsg.TopicInfo{}
	for _, s := range subs {
		for _, rt := range s.RepartitionSourceTopics {
			repartition[rt.Topic] = rt
			if t, ok := topics.Topic(rt.Topic); ok {
				known[rt.Topic] = t.Partitions
			} else if rt.NumPartitions > 0 {
				known[rt.Topic] = rt.NumPartitions
			}
		}
	}
	var all []TopicInfo
	missing := map[string]bool{}
	sources := make([][]string, len(subs))
	for i, s := range subs {
		for _, n := range s.SourceTopics {
			if t, ok := topics.Topic(n); ok {
				known[n] = t.Partitions
			} else {
				missing[n] = true
			}
			sources[i] = append(sources[i], n)
		}
		for _, expr := range s.SourceTopicRegex {
			re, err := compileTopicRegex(expr)
			if err != nil {
				missing[expr] = true
				continue
			}
			if all == nil {
				all = topics.AllTopics()
			}
			matched := false
			for _, t := range all {
				if !t.Internal && re.MatchString(t.Name) {
					known[t.Name] = t.Partitions
					sources[i] = append(sources[i], t.Name)
					matched = true
				}
			}
			if !matched {
				missing[expr] = true
			}
		}
		for _, rt := range s.RepartitionSourceTopics {
			sources[i] = append(sources[i], rt.Topic)
		}
	}
	fixed := func(name string) bool {
		_, exists := topics.Topic(name)
		return exists || repartition[name].NumPartitions > 0
	}
	incorrect := map[string]bool{}
	enforced := map[string]bool{}
	copartition := func() bool {
		moved := false
		for _, s := range subs {
			for _, cg := range s.CopartitionGroups {
				var user, rep []string
				for _, ix := range cg.SourceTopics {
					if int(ix) < len(s.SourceTopics) {
						user = append(user, s.SourceTopics[ix])
					}
				}
				for _, ix := range cg.RepartitionSourceTopics {
					if int(ix) < len(s.RepartitionSourceTopics) {
						rep = append(rep, s.RepartitionSourceTopics[ix].Topic)
					}
				}
				want, ok, mismatch := int32(0), false, false
				for _, u := range user {
					p, k := known[u]
					if !k {
						continue
					}
					if ok && p != want {
						mismatch = true
					}
					want, ok = max(want, p), true
				}
				if mismatch {
					for _, u := range user {
						incorrect[u] = true
					}
				}
				pinned := ok
				if !ok { // only repartition topics: the largest known count
					for _, r := range rep {
						if p, k := known[r]; k {
							want, ok = max(want, p), true
						}
					}
				}
				if !ok {
					continue
				}
				for _, r := range rep {
					if p, k := known[r]; k && p == want {
						continue
					}
					if fixed(r) {
						if p, k := known[r]; k && p != want {
							incorrect[r] = true
						}
						continue
					}
					if pinned {
						enforced[r] = true
					}
					if p, k := known[r]; !k || p != want {
						known[r] = want
						moved = true
					}
				}
			}
		}
		return moved
	}
	// Fixed point: task counts from known sources, sink repartition topics
	// from their writers, copartitioned repartition topics from their group.
	// Counts only grow, except where a copartition group with user topics
	// pins a repartition topic (enforced), which writers then leave alone;
	// the bound guards against a topology that never settles.
	for round, changed := 0, true; changed && round < 4*len(subs)+8; round++ {
		changed = copartition()
		for i, s := range subs {
			n, ok := int32(0), len(sources[i]) > 0
			for _, src := range sources[i] {
				p, k := known[src]
				if !k {
					ok = false
					break
				}
				n = max(n, p)
			}
			if !ok {
				continue
			}
			if prev, had := plan.Tasks[s.SubtopologyID]; !had || prev != n {
				plan.Tasks[s.SubtopologyID] = n
				changed = true
			}
			for _, sink := range s.RepartitionSinkTopics {
				if _, isRepartition := repartition[sink]; !isRepartition || fixed(sink) || enforced[sink] {
					continue
				}
				if known[sink] < n {
					known[sink] = n
					changed = true
				}
			}
		}
	}
	plan.Missing = slices.Sorted(maps.Keys(missing))
	for _, s := range subs {
		for _, ct := range s.StateChangelogTopics {
			n, ok := plan.Tasks[s.SubtopologyID]
			if t, exists := topics.Topic(ct.Topic); ok && exists && ct.NumPartitions <= 0 && t.Partitions != n {
				incorrect[ct.Topic] = true
			}
		}
	}
	plan.Incorrect = slices.Sorted(maps.Keys(incorrect))
	for _, name := range slices.Sorted(maps.Keys(repartition)) {
		rt := repartition[name]
		p, ok := known[name]
		if !ok {
			plan.Unresolved = append(plan.Unresolved, name)
			continue
		}
		plan.Internal = append(plan.Internal, StreamsInternalTopic{Name: name, Partitions: p,
			ReplicationFactor: rt.ReplicationFactor, Configs: topicConfigs(rt.Configs)})
	}
	for _, s := range subs {
		for _, ct := range s.StateChangelogTopics {
			p := ct.NumPartitions
			if p <= 0 {
				n, ok := plan.Tasks[s.SubtopologyID]
				if !ok {
					plan.Unresolved = append(plan.Unresolved, ct.Topic)
					continue
				}
				p = n
			}
			plan.Internal = append(plan.Internal, StreamsInternalTopic{Name: ct.Topic, Partitions: p,
				ReplicationFactor: ct.ReplicationFactor, Configs: topicConfigs(ct.Configs)})
		}
	}
	sort.Strings(plan.Unresolved)
	return plan
}

func topicConfigs(kv []kmsg.TopicInfoConfig) map[string]string {
	out := make(map[string]string, len(kv))
	for _, c := range kv {
		out[c.Key] = c.Value
	}
	return out
}

// taskKey is the [16]byte a streams task's subtopology is stored under in
// the group's partition sets (tasks reuse the consumer-group machinery:
// target, owners, revocation).
func taskKey(sub int) [16]byte {
	var k [16]byte
	copy(k[:], "streams-task")
	s := strconv.Itoa(sub)
	copy(k[12:], s)
	return k
}
