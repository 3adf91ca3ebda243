package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A share group that does not exist, or an id another type of group has,
// is answered as Kafka 4.4's group coordinator answers it: GROUP_ID_NOT_FOUND
// for a heartbeat or a leave (only a join creates the group), for
// ShareGroupDescribe and DeleteShareGroupOffsets, for AlterShareGroupOffsets
// on another type of group; DescribeShareGroupOffsets does not look the
// group up (no state: no topics, start offsets of -1).
func TestShareGroupNotFound(t *testing.T) {
	tb := shareTestBroker(t, nil)
	shareProduceN(t, tb, "nf", 1, 0)
	// A classic group with the id "classic" (a committed offset).
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 9, "classic", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "nf"
	ocp := kmsg.NewOffsetCommitRequestTopicPartition()
	ocp.Offset, ocp.LeaderEpoch = 0, -1
	oct.Partitions = append(oct.Partitions, ocp)
	oc.Topics = append(oc.Topics, oct)
	if r := rawRoundTrip(t, tb.addr, oc).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}

	wantErr := func(what string, code int16, msg *string, want *kerr.Error, wantMsg string) {
		t.Helper()
		if code != want.Code {
			t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(code), want)
		}
		if wantMsg != "" && (msg == nil || *msg != wantMsg) {
			t.Fatalf("%s: message %v, want %q", what, msg, wantMsg)
		}
	}
	r := shareHeartbeat(t, tb, "none", "m", 3)
	wantErr("heartbeat, no group", r.ErrorCode, r.ErrorMessage, kerr.GroupIDNotFound, "Share group none not found.")
	r = shareHeartbeat(t, tb, "none", "m", -1)
	wantErr("leave, no group", r.ErrorCode, r.ErrorMessage, kerr.GroupIDNotFound, "Group none not found.")
	r = shareHeartbeat(t, tb, "classic", "m", 3)
	wantErr("heartbeat, classic group", r.ErrorCode, r.ErrorMessage, kerr.GroupIDNotFound, "Group classic is not a share group.")
	r = shareHeartbeat(t, tb, "classic", "m", 0, "nf")
	wantErr("join, classic group", r.ErrorCode, r.ErrorMessage, kerr.GroupIDNotFound, "Group classic is not a share group.")
	// Nothing was created by those.
	if ok, _ := tb.broker().shares.GroupState("none"); ok {
		t.Fatal("a heartbeat created share group none")
	}
	// A leave of a member the group does not have.
	if j := shareHeartbeat(t, tb, "sg", "m1", 0, "nf"); j.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(j.ErrorCode))
	}
	r = shareHeartbeat(t, tb, "sg", "ghost", -1)
	wantErr("leave, unknown member", r.ErrorCode, r.ErrorMessage, kerr.UnknownMemberID, "Member ghost is not a member of group sg.")
	if r = shareHeartbeat(t, tb, "sg", "m1", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}

	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"none", "classic"}
	dr := tb.request(d).(*kmsg.ShareGroupDescribeResponse)
	wantErr("describe, no group", dr.Groups[0].ErrorCode, dr.Groups[0].ErrorMessage, kerr.GroupIDNotFound, "Group none not found.")
	wantErr("describe, classic group", dr.Groups[1].ErrorCode, dr.Groups[1].ErrorMessage, kerr.GroupIDNotFound, "Group classic is not a share group.")

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "none"
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = "nf"
	del.Topics = append(del.Topics, dt)
	delr := tb.request(del).(*kmsg.DeleteShareGroupOffsetsResponse)
	wantErr("delete offsets, no group", delr.ErrorCode, delr.ErrorMessage, kerr.GroupIDNotFound, "Group none not found.")
	del.GroupID = "classic"
	delr = tb.request(del).(*kmsg.DeleteShareGroupOffsetsResponse)
	wantErr("delete offsets, classic group", delr.ErrorCode, delr.ErrorMessage, kerr.GroupIDNotFound, "Group classic is not a share group.")

	alt := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alt.GroupID = "classic"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "nf"
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}
	alt.Topics = append(alt.Topics, at)
	altr := tb.request(alt).(*kmsg.AlterShareGroupOffsetsResponse)
	wantErr("alter offsets, classic group", altr.ErrorCode, altr.ErrorMessage, kerr.GroupIDNotFound, "Group classic is not a share group.")

	// DescribeShareGroupOffsets: no lookup, no error.
	od := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	odg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	odg.GroupID = "none"
	od.Groups = append(od.Groups, odg) // null topics: all the group has
	odg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "nf", Partitions: []int32{0}}}
	od.Groups = append(od.Groups, odg)
	odr := tb.request(od).(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(odr.Groups) != 2 || odr.Groups[0].ErrorCode != 0 || len(odr.Groups[0].Topics) != 0 {
		t.Fatalf("describe offsets, no group, all topics: %+v", odr.Groups)
	}
	g := odr.Groups[1]
	if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 ||
		g.Topics[0].Partitions[0].ErrorCode != 0 || g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Fatalf("describe offsets, no group, one partition: %+v", g)
	}
}
