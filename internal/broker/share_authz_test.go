package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAuthzShareGroups(t *testing.T) {
	ab := startAuthzBroker(t, map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	ctx := dpCtx(t, 30*time.Second)
	adm := kadm.NewClient(ab.as("admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "events", "secret"); err != nil {
		t.Fatal(err)
	}
	ab.grant(ctx, kadm.NewACLs().Topics("events").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	alice, admin := ab.as("alice"), ab.as("admin")
	events, _ := ab.broker().topics.Get("events")
	secret, _ := ab.broker().topics.Get("secret")

	hb := func(cl *kgo.Client, group, member string, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = group, member, topics
		return send[*kmsg.ShareGroupHeartbeatResponse](t, cl, req)
	}
	fetch := func(cl *kgo.Client, group string, ids ...[16]byte) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr("m")
		for _, id := range ids {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = id
			rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}
			req.Topics = append(req.Topics, rt)
		}
		return send[*kmsg.ShareFetchResponse](t, cl, req)
	}

	// without READ on the group
	wantCode(t, "ShareGroupHeartbeat", hb(alice, "sg", "m", "events").ErrorCode, kerr.GroupAuthorizationFailed)
	wantCode(t, "ShareFetch", fetch(alice, "sg", [16]byte(events.ID)).ErrorCode, kerr.GroupAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().Groups("sg").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	wantCode(t, "ShareGroupHeartbeat on secret", hb(alice, "sg", "m", "secret").ErrorCode, kerr.TopicAuthorizationFailed)
	wantCode(t, "ShareGroupHeartbeat on events", hb(alice, "sg", "m", "events").ErrorCode, nil)
	fr := fetch(alice, "sg", [16]byte(events.ID), [16]byte(secret.ID))
	wantCode(t, "ShareFetch", fr.ErrorCode, nil)
	codes := map[[16]byte]int16{}
	for _, rt := range fr.Topics {
		codes[rt.TopicID] = rt.Partitions[0].ErrorCode
	}
	wantCode(t, "ShareFetch events", codes[[16]byte(events.ID)], nil)
	wantCode(t, "ShareFetch secret", codes[[16]byte(secret.ID)], kerr.TopicAuthorizationFailed)

	// a share group alice may not describe: hidden from ListGroups, refused by ShareGroupDescribe and DeleteGroups
	wantCode(t, "admin joins hidden", hb(admin, "hidden", "a", "events").ErrorCode, nil)
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	var listed []string
	for _, g := range send[*kmsg.ListGroupsResponse](t, alice, lg).Groups {
		listed = append(listed, g.Group)
	}
	if len(listed) != 1 || listed[0] != "sg" {
		t.Fatalf("alice lists share groups %v, want [sg]", listed)
	}
	dg := kmsg.NewPtrShareGroupDescribeRequest()
	dg.GroupIDs = []string{"sg", "hidden"}
	dr := send[*kmsg.ShareGroupDescribeResponse](t, alice, dg)
	for _, g := range dr.Groups {
		want := (*kerr.Error)(nil)
		if g.GroupID == "hidden" {
			want = kerr.GroupAuthorizationFailed
		}
		wantCode(t, "ShareGroupDescribe "+g.GroupID, g.ErrorCode, want)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"hidden"}
	wantCode(t, "DeleteGroups hidden", send[*kmsg.DeleteGroupsResponse](t, alice, del).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	if !ab.broker().shares.Exists("hidden") {
		t.Fatal("a refused DeleteGroups deleted the share group")
	}
	od := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	od.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "hidden"}}
	wantCode(t, "DescribeShareGroupOffsets hidden", send[*kmsg.DescribeShareGroupOffsetsResponse](t, alice, od).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
}
