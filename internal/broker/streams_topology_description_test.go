package broker

import (
	"fmt"
	"sort"
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

// ListTransactions v2's TransactionalIdPattern keeps the ids it matches in
// full; an invalid pattern is INVALID_REGULAR_EXPRESSION.
func TestListTransactionsPattern(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	for _, id := range []string{"orders-1", "orders-2", "payments-1"} {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		if r := tb.request(ip).(*kmsg.InitProducerIDResponse); r.ErrorCode != 0 {
			t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	list := func(pattern *string) ([]string, int16) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.TransactionalIDPattern = 2, pattern
		resp := tb.request(req).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		sort.Strings(ids)
		return ids, resp.ErrorCode
	}
	for _, c := range []struct {
		pattern *string
		want    string
	}{
		{nil, "[orders-1 orders-2 payments-1]"},
		{kmsg.StringPtr(""), "[orders-1 orders-2 payments-1]"},
		{kmsg.StringPtr("orders-.*"), "[orders-1 orders-2]"},
		{kmsg.StringPtr("orders"), "[]"}, // a full match, not a substring
		{kmsg.StringPtr(".*-1"), "[orders-1 payments-1]"},
	} {
		if ids, code := list(c.pattern); code != 0 || fmt.Sprint(ids) != c.want {
			t.Fatalf("pattern %v: %v %v, want %s", c.pattern, ids, kerr.ErrorForCode(code), c.want)
		}
	}
	if _, code := list(kmsg.StringPtr("orders-[")); code != kerr.InvalidRegularExpression.Code {
		t.Fatalf("invalid pattern: %v", kerr.ErrorForCode(code))
	}
}

// ApiVersions v5 (KIP-1242): a client naming another cluster or node is
// told REBOOTSTRAP_REQUIRED; naming none, or this one, gets the versions.
func TestApiVersionsRebootstrap(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	av := func(cluster *string, node int32) *kmsg.ApiVersionsResponse {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 5, "sluice-test", "1.0"
		req.ClusterID, req.NodeID = cluster, node
		return tb.request(req).(*kmsg.ApiVersionsResponse)
	}
	b := tb.broker()
	if r := av(nil, -1); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
		t.Fatalf("no cluster named: %+v", r)
	}
	if r := av(kmsg.StringPtr(b.ClusterID()), b.self()); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
		t.Fatalf("this cluster and node: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, c := range []struct {
		cluster string
		node    int32
	}{{"another-cluster", b.self()}, {b.ClusterID(), b.self() + 1}} {
		if r := av(kmsg.StringPtr(c.cluster), c.node); r.ErrorCode != kerr.RebootstrapRequired.Code || len(r.ApiKeys) != 0 {
			t.Fatalf("%+v: %v", c, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}
