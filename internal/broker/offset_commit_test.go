package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetsAdminAndRestart(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: groupProps()})
	createTestTopic(t, tb, "t", 2)
	createTestTopic(t, tb, "u", 1)
	adm := tb.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// FindCoordinator, batched (v4+) and single (v3).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"a", "b"}
	fr := tb.request(fc).(*kmsg.FindCoordinatorResponse)
	if len(fr.Coordinators) != 2 || fr.Coordinators[1].ErrorCode != 0 || fr.Coordinators[1].NodeID != tb.broker().nodeID {
		t.Fatalf("find coordinator: %+v", fr)
	}

	// OffsetFetch of a group that does not exist: -1, no error.
	of := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "nobody"
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
	of.Groups = []kmsg.OffsetFetchRequestGroup{g}
	ofr := tb.request(of).(*kmsg.OffsetFetchResponse)
	if p := ofr.Groups[0].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 || ofr.Groups[0].ErrorCode != 0 {
		t.Fatalf("offset fetch unknown group: %+v", ofr.Groups[0])
	}

	// Simple commits with kadm, with metadata and leader epoch.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "t", Partition: 0, At: 10, LeaderEpoch: 0, Metadata: "hello"})
	os.Add(kadm.Offset{Topic: "t", Partition: 1, At: 20, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "u", Partition: 0, At: 5, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "g", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	bad := kadm.Offsets{}
	bad.Add(kadm.Offset{Topic: "missing", Partition: 0, At: 1})
	if r, err := adm.CommitOffsets(ctx, "g", bad); err != nil || r.Error() == nil {
		t.Fatalf("commit to a missing topic should fail per partition: %v", err)
	}

	tb.restart()
	adm = tb.admin()
	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("t", 0); !ok || o.At != 10 || o.Metadata != "hello" {
		t.Fatalf("after restart t/0: %+v", o)
	}
	if o, _ := fetched.Lookup("t", 1); o.At != 20 {
		t.Fatalf("after restart t/1: %+v", o)
	}

	// OffsetDelete of one topic, then DeleteGroups.
	ds := kadm.TopicsSet{}
	ds.Add("u", 0)
	dr, err := adm.DeleteOffsets(ctx, "g", ds)
	if err != nil || dr.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, dr.Error())
	}
	fetched, _ = adm.FetchOffsets(ctx, "g")
	if _, ok := fetched.Lookup("u", 0); ok {
		if o, _ := fetched.Lookup("u", 0); o.At != -1 {
			t.Fatalf("u/0 still committed: %+v", o)
		}
	}
	gr, err := adm.DeleteGroups(ctx, "g", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if gr["g"].Err != nil || gr["missing"].Err != kerr.GroupIDNotFound {
		t.Fatalf("delete groups: %+v", gr)
	}
	tb.restart()
	adm = tb.admin()
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lg["g"]; ok {
		t.Fatal("deleted group is back after restart")
	}
}
