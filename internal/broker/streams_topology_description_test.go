package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-1331 over the wire, with an authorizer: StreamsGroupTopologyDescriptionUpdate
// needs READ on the group; a client negotiating StreamsGroupHeartbeat v1 is
// asked for the description, pushes it, and StreamsGroupDescribe v1 returns it.
func TestStreamsTopologyDescriptionWire(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx := dpCtx(t, 30*time.Second)
	if _, err := kadm.NewClient(ab.as("admin")).CreateTopics(ctx, 2, 1, nil, "words"); err != nil {
		t.Fatal(err)
	}
	alice := ab.as("alice")

	push := func() *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		u := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
		u.Group, u.MemberID, u.TopologyEpoch = "app", "m1", 1
		src := kmsg.NewTopologyDescriptionNode()
		src.Name, src.NodeType, src.SourceTopics = "KSTREAM-SOURCE-0000000000", 1, []string{"words"}
		u.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{{SubtopologyID: "0", Nodes: []kmsg.TopologyDescriptionNode{src}}}
		return send[*kmsg.StreamsGroupTopologyDescriptionUpdateResponse](t, alice, u)
	}
	wantCode(t, "push without READ on the group", push().ErrorCode, kerr.GroupAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().Groups("app").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	ab.grant(ctx, kadm.NewACLs().Topics("words").Allow("User:alice").AllowHosts("*").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	wantCode(t, "push before joining", push().ErrorCode, kerr.GroupIDNotFound)

	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.ProcessID = "app", "m1", 30000, kmsg.StringPtr("p1")
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID, sub.SourceTopics = "0", []string{"words"}
	hb.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}}
	hr := send[*kmsg.StreamsGroupHeartbeatResponse](t, alice, hb)
	wantCode(t, "join", hr.ErrorCode, nil)
	if hr.Version < 1 || !hr.TopologyDescriptionRequired {
		t.Fatalf("join answered at v%d, description required %v; want v1 asking for it", hr.Version, hr.TopologyDescriptionRequired)
	}
	wantCode(t, "push", push().ErrorCode, nil)

	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups, d.IncludeTopologyDescription = []string{"app"}, true
	g := send[*kmsg.StreamsGroupDescribeResponse](t, alice, d).Groups[0]
	wantCode(t, "describe", g.ErrorCode, nil)
	if g.TopologyDescriptionStatus != 3 || g.TopologyDescription == nil || len(g.TopologyDescription.Subtopologies) != 1 ||
		g.TopologyDescription.Subtopologies[0].Nodes[0].Name != "KSTREAM-SOURCE-0000000000" || g.AssignorName == nil || *g.AssignorName != "sticky" {
		t.Fatalf("describe: status %d description %+v assignor %v", g.TopologyDescriptionStatus, g.TopologyDescription, g.AssignorName)
	}
}
