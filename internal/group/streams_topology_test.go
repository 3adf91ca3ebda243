package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type streamsFakeTopics map[string]int32

func (f streamsFakeTopics) Topic(name string) (TopicInfo, bool) {
	p, ok := f[name]
	return TopicInfo{Name: name, Partitions: p}, ok
}
func (f streamsFakeTopics) TopicByID([16]byte) (TopicInfo, bool) { return TopicInfo{}, false }
func (f streamsFakeTopics) AllTopics() []TopicInfo {
	var out []TopicInfo
	for n, p := range f {
		out = append(out, TopicInfo{Name: n, Partitions: p})
	}
	return out
}
func (f streamsFakeTopics) EndOffset(string, int32) (int64, bool) { return 0, false }

func internalOf(p StreamsPlan) map[string]int32 {
	out := map[string]int32{}
	for _, it := range p.Internal {
		out[it.Name] = it.Partitions
	}
	return out
}

// A join of two re-keyed streams: both repartition topics are
// copartitioned, so they get the same count (the larger upstream's), and
// the join's changelog follows.
func TestResolveStreamsTopologyCopartition(t *testing.T) {
	sub := func(id string) kmsg.StreamsGroupHeartbeatRequestTopologySubtopology {
		s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s.SubtopologyID = id
		return s
	}
	s0, s1, s2 := sub("0"), sub("1"), sub("2")
	s0.SourceTopics, s0.RepartitionSinkTopics = []string{"left"}, []string{"left-rep"}
	s1.SourceTopics, s1.RepartitionSinkTopics = []string{"right"}, []string{"right-rep"}
	s2.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "left-rep"}, {Topic: "right-rep"}}
	s2.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "join-changelog"}}
	s2.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{RepartitionSourceTopics: []int16{0, 1}}}
	plan := ResolveStreamsTopology([]StreamsSubtopology{s0, s1, s2}, streamsFakeTopics{"left": 2, "right": 5})
	got := internalOf(plan)
	if got["left-rep"] != 5 || got["right-rep"] != 5 || got["join-changelog"] != 5 || plan.Tasks["2"] != 5 || plan.Tasks["0"] != 2 {
		t.Fatalf("plan %+v internal %v", plan, got)
	}

	// A stream-table join on user topics: they must already agree.
	j := sub("0")
	j.SourceTopics = []string{"orders", "customers"}
	j.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 1}}}
	plan = ResolveStreamsTopology([]StreamsSubtopology{j}, streamsFakeTopics{"orders": 3, "customers": 4})
	if !slices.Equal(plan.Incorrect, []string{"customers", "orders"}) {
		t.Fatalf("mismatched copartitioned sources: %+v", plan)
	}
	plan = ResolveStreamsTopology([]StreamsSubtopology{j}, streamsFakeTopics{"orders": 3, "customers": 3})
	if len(plan.Incorrect) != 0 || plan.Tasks["0"] != 3 {
		t.Fatalf("matching copartitioned sources: %+v", plan)
	}

	// A user topic pins a copartitioned repartition topic whatever its writer has.
	w, r := sub("0"), sub("1")
	w.SourceTopics, w.RepartitionSinkTopics = []string{"big"}, []string{"rekeyed"}
	r.SourceTopics = []string{"table"}
	r.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "rekeyed"}}
	r.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0}, RepartitionSourceTopics: []int16{0}}}
	plan = ResolveStreamsTopology([]StreamsSubtopology{w, r}, streamsFakeTopics{"big": 8, "table": 3})
	if got := internalOf(plan); got["rekeyed"] != 3 || plan.Tasks["1"] != 3 || plan.Tasks["0"] != 8 {
		t.Fatalf("pinned repartition topic: %+v %v", plan, got)
	}

	// An existing changelog with the wrong count is reported.
	c := sub("0")
	c.SourceTopics = []string{"in"}
	c.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "store-changelog"}}
	plan = ResolveStreamsTopology([]StreamsSubtopology{c}, streamsFakeTopics{"in": 4, "store-changelog": 2})
	if !slices.Equal(plan.Incorrect, []string{"store-changelog"}) {
		t.Fatalf("wrong changelog: %+v", plan)
	}
}
