package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A share group lives at its coordinator only, as in Kafka: another broker
// answers its heartbeats NOT_COORDINATOR (the member finds the coordinator
// again) and does not list it in ListGroups (an admin client merges every
// broker's answer: the group was listed twice, with the wrong coordinator).
func TestClusterShareGroupOnlyAtItsCoordinator(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	pollUntil(t, "the topic to be created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := adm.CreateTopic(ctx, 1, 3, nil, "sg-topic")
		return err == nil && (r.Err == nil || r.Err == kerr.TopicAlreadyExists)
	})
	const group = "sg-coord"
	coord := int32(-1)
	pollUntil(t, "the group's coordinator", func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKeys = 4, []string{group}
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.Version = 4
		rawRequest(t, tc.nodes[0].addr, req, resp)
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return false
		}
		coord = resp.Coordinators[0].NodeID
		return true
	})
	heartbeat := func(addr string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.MemberEpoch = group, "m1aaaaaaaaaaaaaaaaaaaa", 0
		req.SubscribedTopicNames = []string{"sg-topic"}
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.Version = 1
		rawRequest(t, addr, req, resp)
		return resp
	}
	for i, n := range tc.nodes {
		if int32(i+1) == coord {
			continue
		}
		if resp := heartbeat(n.addr); resp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("heartbeat at node %d (the coordinator is %d): %v, want NOT_COORDINATOR", i+1, coord, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	pollUntil(t, "a heartbeat at the coordinator", func() bool {
		resp := heartbeat(tc.nodes[coord-1].addr)
		switch resp.ErrorCode {
		case 0:
			return true
		case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
			return false // its partition is still being loaded
		}
		t.Fatalf("heartbeat at the coordinator %d: %v", coord, kerr.ErrorForCode(resp.ErrorCode))
		return false
	})
	for i, n := range tc.nodes {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 5
		resp := kmsg.NewPtrListGroupsResponse()
		resp.Version = 5
		rawRequest(t, n.addr, req, resp)
		listed := 0
		for _, g := range resp.Groups {
			if g.Group == group {
				listed++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[int32(i+1) == coord]; listed != want {
			t.Fatalf("node %d (the coordinator is %d) lists %s %d times, want %d", i+1, coord, group, listed, want)
		}
	}
}
