package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRoundTrip sends req (at req's version) on a fresh connection to addr
// and returns the decoded response.
func rawRoundTrip(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	rc := dialRaw(t, addr)
	defer rc.nc.Close()
	rc.send(req, 1)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rc.recv(resp)
	return resp
}

// apiVersionsAt sends ApiVersions at version v.
func apiVersionsAt(t *testing.T, addr string, v int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = v
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1"
	return rawRoundTrip(t, addr, req).(*kmsg.ApiVersionsResponse)
}

func finalized(resp *kmsg.ApiVersionsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out
}

func supportedFeatures(resp *kmsg.ApiVersionsResponse) map[string][2]int16 {
	out := map[string][2]int16{}
	for _, f := range resp.SupportedFeatures {
		out[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	return out
}

func updateFeatures(t *testing.T, addr string, v int16, validateOnly bool, ups ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = v
	req.FeatureUpdates = ups
	req.ValidateOnly = validateOnly
	return rawRoundTrip(t, addr, req).(*kmsg.UpdateFeaturesResponse)
}

func featureUpdate(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
	return u
}

func TestFeaturesReportAndUpdate(t *testing.T) {
	tb := startTestBroker(t, testOptions{})

	v4 := apiVersionsAt(t, tb.addr, 4)
	sup := supportedFeatures(v4)
	if sup["metadata.version"] != [2]int16{7, 33} || sup["group.version"] != [2]int16{0, 1} || sup["share.version"] != [2]int16{0, 1} {
		t.Fatalf("v4 supported features %v", sup)
	}
	if sup["streams.version"] != [2]int16{0, 1} || sup["transaction.version"] != [2]int16{0, 2} || sup["kraft.version"] != [2]int16{0, 0} {
		t.Fatalf("v4 supported features %v", sup)
	}
	fin := finalized(v4)
	if fin["metadata.version"] != 33 || fin["group.version"] != 1 || fin["share.version"] != 1 || fin["transaction.version"] != 2 || fin["streams.version"] != 1 {
		t.Fatalf("v4 finalized features %v", fin)
	}
	if _, ok := fin["kraft.version"]; ok {
		t.Fatalf("level-0 feature finalized: %v", fin)
	}
	// Below v4 Kafka leaves out supported features with a 0 minimum.
	if sup3 := supportedFeatures(apiVersionsAt(t, tb.addr, 3)); len(sup3) != 1 || sup3["metadata.version"] != [2]int16{7, 33} {
		t.Fatalf("v3 supported features %v", sup3)
	}
	epoch0 := v4.FinalizedFeaturesEpoch

	// Refusals: a downgrade without a downgrade type, an unknown feature,
	// a level out of range; the whole request is refused.
	for _, ups := range [][]kmsg.UpdateFeaturesRequestFeatureUpdate{
		{featureUpdate("group.version", 0, 1)},
		{featureUpdate("share.version", 0, 2), featureUpdate("no.such.version", 1, 1)},
		{featureUpdate("group.version", 5, 1)},
		{featureUpdate("metadata.version", 20, 2)},
	} {
		resp := updateFeatures(t, tb.addr, 1, false, ups...)
		if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || len(resp.Results) != len(ups) || resp.Results[0].ErrorCode != resp.ErrorCode {
			t.Fatalf("updates %+v: %+v", ups, resp)
		}
	}
	if fin := finalized(apiVersionsAt(t, tb.addr, 4)); fin["share.version"] != 1 {
		t.Fatalf("refused request changed levels: %v", fin)
	}
	// Validate only changes nothing.
	if resp := updateFeatures(t, tb.addr, 1, true, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 {
		t.Fatalf("validate-only: %+v", resp)
	}
	if fin := finalized(apiVersionsAt(t, tb.addr, 4)); fin["group.version"] != 1 {
		t.Fatalf("validate-only changed levels: %v", fin)
	}
	// A safe downgrade to 0 removes the finalized feature and bumps the epoch.
	if resp := updateFeatures(t, tb.addr, 2, false, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 || len(resp.Results) != 0 {
		t.Fatalf("downgrade: %+v", resp)
	}
	after := apiVersionsAt(t, tb.addr, 4)
	if _, ok := finalized(after)["group.version"]; ok || after.FinalizedFeaturesEpoch <= epoch0 {
		t.Fatalf("after downgrade: %v epoch %d (was %d)", finalized(after), after.FinalizedFeaturesEpoch, epoch0)
	}
	// The levels survive a restart.
	tb.restart()
	if fin := finalized(apiVersionsAt(t, tb.addr, 4)); fin["group.version"] != 0 || fin["share.version"] != 1 {
		t.Fatalf("after restart: %v", fin)
	}
	if resp := updateFeatures(t, tb.addr, 1, false, featureUpdate("group.version", 1, 1)); resp.ErrorCode != 0 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("upgrade: %+v", resp)
	}
	if fin := finalized(apiVersionsAt(t, tb.addr, 4)); fin["group.version"] != 1 {
		t.Fatalf("after upgrade: %v", fin)
	}
}

// On a cluster the levels are a metadata record: an update sent to any
// node is seen by every node, and a refused one by none.
func TestClusterFeatures(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool {
		return len(md.Brokers) == 3 && md.Controller > 0
	})
	for _, n := range tc.nodes {
		if fin := finalized(apiVersionsAt(t, n.addr, 4)); fin["group.version"] != 1 || fin["metadata.version"] != 33 {
			t.Fatalf("node %s: default levels %v", n.addr, fin)
		}
	}
	if resp := updateFeatures(t, tc.nodes[1].addr, 1, false, featureUpdate("group.version", 0, 1)); resp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("downgrade without type: %+v", resp)
	}
	resp := updateFeatures(t, tc.nodes[1].addr, 2, false, featureUpdate("share.version", 0, 2))
	if resp.ErrorCode != 0 {
		t.Fatalf("downgrade: %+v", resp)
	}
	// The answering node has published the change; the others follow.
	if fin := finalized(apiVersionsAt(t, tc.nodes[1].addr, 4)); fin["share.version"] != 0 {
		t.Fatalf("answering node still at %v", fin)
	}
	for _, n := range tc.nodes {
		waitFor(t, "share.version 0 on "+n.addr, func() bool {
			_, ok := finalized(apiVersionsAt(t, n.addr, 4))["share.version"]
			return !ok
		})
	}
}

// group.version 0 turns the KIP-848 consumer protocol off, share.version 0
// share groups, as in Kafka.
func TestFeatureLevelsGateProtocols(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	if resp := updateFeatures(t, tb.addr, 1, false, featureUpdate("group.version", 0, 2), featureUpdate("share.version", 0, 2)); resp.ErrorCode != 0 {
		t.Fatalf("downgrade: %+v", resp)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "m2aaaaaaaaaaaaaaaaaaaa", 0, 30000
	hb.SubscribedTopicNames = []string{"t"}
	if resp := tb.request(hb).(*kmsg.ConsumerGroupHeartbeatResponse); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("consumer heartbeat at group.version 0: %+v", resp)
	}
	shb := kmsg.NewPtrShareGroupHeartbeatRequest()
	shb.GroupID, shb.MemberID, shb.MemberEpoch = "sg", "m1aaaaaaaaaaaaaaaaaaaa", 0
	shb.SubscribedTopicNames = []string{"t"}
	if resp := tb.request(shb).(*kmsg.ShareGroupHeartbeatResponse); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("share heartbeat at share.version 0: %+v", resp)
	}
	if resp := updateFeatures(t, tb.addr, 1, false, featureUpdate("group.version", 1, 1)); resp.ErrorCode != 0 {
		t.Fatalf("upgrade: %+v", resp)
	}
	if resp := tb.request(hb).(*kmsg.ConsumerGroupHeartbeatResponse); resp.ErrorCode != 0 {
		t.Fatalf("consumer heartbeat at group.version 1: %+v", resp)
	}
}
