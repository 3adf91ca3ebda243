package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// TestClusterShareOffsetsDeleteDropsLeaderCopy: DeleteShareGroupOffsets sent to
// a broker that does not lead the partition makes the leader drop its copy of
// the share partition, as AlterShareGroupOffsets does, so that the leader's
// next use reads the state again (none: share.auto.offset.reset) instead of
// serving the deleted state and writing it back.
func TestClusterShareOffsetsDeleteDropsLeaderCopy(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	waitCluster(t, tc.admin(), "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	cl := tc.client()
	const topic, group = "share-delete", "sg-delete"
	createOnReplicaWithRecords(t, cl, topic, 1, 3)
	pollUntil(t, "every broker to see broker 1 lead "+topic, func() bool {
		for _, n := range tc.nodes {
			im := n.broker().image()
			if im == nil {
				return false
			}
			if ip, ok := im.Partition(topic, 0); !ok || ip.Leader != 1 {
				return false
			}
		}
		return true
	})
	via := tc.nodes[1].addr // not the leader
	retriable := func(code int16) bool {
		switch code {
		case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code,
			kerr.LeaderNotAvailable.Code, kerr.NotLeaderForPartition.Code:
			return true
		}
		return false
	}

	// AlterShareGroupOffsets to 2 (it creates the group, empty).
	pollUntil(t, "AlterShareGroupOffsets to 2", func() bool {
		resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
		rawRequest(t, via, alterShareOffsetsReq(group, topic, 0, 2), resp)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("AlterShareGroupOffsets: error %d, topics %+v", resp.ErrorCode, resp.Topics)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code != 0 && !retriable(code) {
			t.Fatalf("AlterShareGroupOffsets: %v", kerr.ErrorForCode(code))
		}
		return code == 0
	})

	// The leader reads the state, as its next ShareFetch would.
	leader := tc.nodes[0].broker()
	top, _ := leader.topics.Get(topic)
	k := share.Key{Group: group, TopicID: [16]byte(top.ID), Partition: 0}
	reset := func(string) int64 { return 0 } // share.auto.offset.reset: the log start
	pollUntil(t, "the leader to read start offset 2", func() bool {
		sp, err := leader.shares.Get(k, reset)
		if err != nil {
			return false
		}
		start, _ := sp.Offsets()
		return start == 2
	})

	pollUntil(t, "DeleteShareGroupOffsets", func() bool {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		dt.Topic = topic
		req.Topics = append(req.Topics, dt)
		resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
		rawRequest(t, via, req, resp)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
			t.Fatalf("DeleteShareGroupOffsets: error %d, topics %+v", resp.ErrorCode, resp.Topics)
		}
		code := resp.Topics[0].ErrorCode
		if code != 0 && !retriable(code) {
			t.Fatalf("DeleteShareGroupOffsets: %v", kerr.ErrorForCode(code))
		}
		return code == 0
	})
	if leader.shares.Lookup(k) != nil {
		t.Fatal("the leader kept its copy of the deleted share partition")
	}
	sp, err := leader.shares.Get(k, reset)
	if err != nil {
		t.Fatal(err)
	}
	if start, _ := sp.Offsets(); start != 0 {
		t.Fatalf("the leader's next read starts at %d, want 0 (share.auto.offset.reset, no state)", start)
	}
}
