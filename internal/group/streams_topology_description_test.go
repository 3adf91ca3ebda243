package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testTopologyDescription() kmsg.TopologyDescription {
	src := kmsg.NewTopologyDescriptionNode()
	src.Name, src.NodeType, src.SourceTopics, src.Successors = "KSTREAM-SOURCE-0000000000", 1, []string{"words"}, []string{"KSTREAM-AGGREGATE-0000000001"}
	src.Stores = []string{}
	agg := kmsg.NewTopologyDescriptionNode()
	agg.Name, agg.NodeType, agg.Stores, agg.Successors = "KSTREAM-AGGREGATE-0000000001", 2, []string{"counts"}, []string{}
	agg.SourceTopics = []string{}
	gsrc := kmsg.NewTopologyDescriptionNode()
	gsrc.Name, gsrc.NodeType, gsrc.SourceTopics = "KSTREAM-SOURCE-0000000002", 1, []string{"table"}
	gsrc.Stores, gsrc.Successors = []string{}, []string{"KTABLE-SOURCE-0000000003"}
	gproc := kmsg.NewTopologyDescriptionNode()
	gproc.Name, gproc.NodeType, gproc.Stores = "KTABLE-SOURCE-0000000003", 2, []string{"global"}
	gproc.SourceTopics, gproc.Successors = []string{}, []string{}
	return kmsg.TopologyDescription{
		Subtopologies: []kmsg.TopologyDescriptionSubtopology{{SubtopologyID: "0", Nodes: []kmsg.TopologyDescriptionNode{src, agg}}},
		GlobalStores:  []kmsg.TopologyDescriptionGlobalStore{{Source: gsrc, Processor: gproc}},
	}
}

// sameDescription compares a described description with a pushed one
// (printed: decoding leaves empty tag maps where the pushed one has none).
func sameDescription(got *kmsg.StreamsGroupDescribeResponseGroupTopologyDescription, want kmsg.TopologyDescription) bool {
	return fmt.Sprintf("%+v %+v", got.Subtopologies, got.GlobalStores) == fmt.Sprintf("%+v %+v", want.Subtopologies, want.GlobalStores)
}

func streamsHB(group, member string, epoch int32, version int16) *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Version = version
	r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
	r.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 30000
		r.ProcessID = kmsg.StringPtr("p-" + member)
		r.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 2, Subtopologies: []StreamsSubtopology{{
			SubtopologyID: "0", SourceTopics: []string{"words"},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-counts-changelog", ReplicationFactor: -1}},
		}}}
	}
	return r
}

// KIP-1331: a v1 heartbeat asks for the topology description (with Kafka's
// backoff), a member pushes it, StreamsGroupDescribe v1 returns it, and it
// survives a restart of the coordinator.
func TestStreamsTopologyDescription(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("words", 2)
	e.topics.add("app-counts-changelog", 2)
	describe := func(include bool) kmsg.StreamsGroupDescribeResponseGroup {
		d := kmsg.NewPtrStreamsGroupDescribeRequest()
		d.Version, d.Groups, d.IncludeTopologyDescription = 1, []string{"app"}, include
		g := e.c.StreamsGroupDescribe(d).Groups[0]
		if g.ErrorCode != 0 || g.AssignorName == nil || *g.AssignorName != "sticky" {
			t.Fatalf("describe: %+v", g)
		}
		return g
	}
	push := func(member string, epoch int32) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		u := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
		u.Group, u.MemberID, u.TopologyEpoch, u.TopologyDescription = "app", member, epoch, testTopologyDescription()
		return e.c.StreamsGroupTopologyDescriptionUpdate(u)
	}

	// A v0 member is never asked; a v1 member is, once per backoff period.
	if r := e.c.StreamsGroupHeartbeat(testClient, streamsHB("app", "old", 0, 0)); r.ErrorCode != 0 || r.TopologyDescriptionRequired {
		t.Fatalf("v0 join: %+v", r)
	}
	r := e.c.StreamsGroupHeartbeat(testClient, streamsHB("app", "m1", 0, 1))
	if r.ErrorCode != 0 || !r.TopologyDescriptionRequired {
		t.Fatalf("v1 join: %+v", r)
	}
	epoch := r.MemberEpoch
	hb := func() *kmsg.StreamsGroupHeartbeatResponse {
		r := e.c.StreamsGroupHeartbeat(testClient, streamsHB("app", "m1", epoch, 1))
		if r.ErrorCode == 0 {
			epoch = r.MemberEpoch
		}
		return r
	}
	if r := hb(); r.ErrorCode != 0 || r.TopologyDescriptionRequired {
		t.Fatalf("asked again within the backoff: %+v", r)
	}
	e.clock.Advance(topologyDescAskInitial + time.Second)
	if r := hb(); r.ErrorCode != 0 || !r.TopologyDescriptionRequired {
		t.Fatalf("not asked again after the backoff: %+v", r)
	}
	e.clock.Advance(topologyDescAskInitial + time.Second) // the backoff doubled
	if r := hb(); r.ErrorCode != 0 || r.TopologyDescriptionRequired {
		t.Fatalf("asked again before the doubled backoff: %+v", r)
	}
	if g := describe(true); g.TopologyDescriptionStatus != topologyDescNotStored || g.TopologyDescription != nil {
		t.Fatalf("before a push: status %d %+v", g.TopologyDescriptionStatus, g.TopologyDescription)
	}

	// Bad pushes.
	for _, c := range []struct {
		member string
		epoch  int32
		group  string
		want   int16
	}{
		{"m1", 1, "app", kerr.InvalidRequest.Code}, // not the group's topology epoch
		{"nobody", 2, "app", kerr.UnknownMemberID.Code},
		{"", 2, "app", kerr.InvalidRequest.Code},
		{"m1", 2, "other", kerr.GroupIDNotFound.Code},
		{"m1", 2, "", kerr.InvalidRequest.Code},
	} {
		u := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
		u.Group, u.MemberID, u.TopologyEpoch = c.group, c.member, c.epoch
		if r := e.c.StreamsGroupTopologyDescriptionUpdate(u); r.ErrorCode != c.want || r.ErrorMessage == nil {
			t.Fatalf("push %+v: %+v, want error %d with a message", c, r, c.want)
		}
	}

	if r := push("m1", 2); r.ErrorCode != 0 {
		t.Fatalf("push: %+v", r)
	}
	want := testTopologyDescription()
	g := describe(true)
	if g.TopologyDescriptionStatus != topologyDescAvailable || g.TopologyDescription == nil ||
		!sameDescription(g.TopologyDescription, want) {
		t.Fatalf("after the push: status %d %+v", g.TopologyDescriptionStatus, g.TopologyDescription)
	}
	if g := describe(false); g.TopologyDescriptionStatus != topologyDescNotRequested || g.TopologyDescription != nil {
		t.Fatalf("not requested: status %d %+v", g.TopologyDescriptionStatus, g.TopologyDescription)
	}
	e.clock.Advance(topologyDescAskInitial + time.Second) // within the session timeout
	if r := hb(); r.ErrorCode != 0 || r.TopologyDescriptionRequired {
		t.Fatalf("asked although stored: %+v", r)
	}

	// The description is written to __consumer_offsets with the group.
	e.restart(Config{})
	g = describe(true)
	if g.TopologyDescriptionStatus != topologyDescAvailable || g.TopologyDescription == nil ||
		!sameDescription(g.TopologyDescription, want) {
		t.Fatalf("after a restart: status %d %+v", g.TopologyDescriptionStatus, g.TopologyDescription)
	}
	if r := hb(); r.ErrorCode != 0 || r.TopologyDescriptionRequired {
		t.Fatalf("asked after a restart although stored: %+v", r)
	}

	// A new topology epoch needs a new description.
	j := streamsHB("app", "m2", 0, 1)
	j.Topology.Epoch = 3
	if r := e.c.StreamsGroupHeartbeat(testClient, j); r.ErrorCode != 0 || !r.TopologyDescriptionRequired {
		t.Fatalf("join with a newer topology: %+v", r)
	}
	if g := describe(true); g.TopologyDescriptionStatus != topologyDescNotStored {
		t.Fatalf("description of an older epoch returned: status %d", g.TopologyDescriptionStatus)
	}
}
