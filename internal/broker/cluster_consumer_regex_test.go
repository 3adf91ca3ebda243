package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 regex subscription on a cluster follows a topic created through
// another broker: the group coordinator learns of the topic from the metadata
// log, possibly after the creating broker has answered, and the member is
// assigned the topic's partitions at a later heartbeat (the coordinator resolves
// the regex against its current image at every heartbeat, so a topic that
// reaches the image late is not missed). A guard for the race suspected behind
// franz-go's Test848RegexBrokerResolves failures at RF 3 (docs/cluster.md).
func TestClusterConsumerRegexTopicCreatedElsewhere(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	const group = "rx-cluster-group"
	coord := int32(-1)
	findCoordinator := func() {
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
			return coord >= 1 && int(coord) <= len(tc.nodes)
		})
	}
	findCoordinator()
	regex := "rx-.*"
	memberID := "rx-member-aaaaaaaaaaaa"
	epoch := int32(0)
	owned := map[[16]byte][]int32{}
	heartbeat := func() *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = group, memberID, epoch
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicRegex = &regex
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range owned {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
		}
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version = 1
		rawRequest(t, tc.nodes[coord-1].addr, req, resp)
		if resp.ErrorCode == kerr.NotCoordinator.Code {
			findCoordinator() // its __consumer_offsets partition moved
		}
		if resp.ErrorCode == 0 {
			epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				owned = map[[16]byte][]int32{}
				for _, at := range resp.Assignment.Topics {
					owned[at.TopicID] = at.Partitions
				}
			}
		}
		return resp
	}
	retriable := func(code int16) bool {
		return code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code
	}
	// The member joins while no topic matches.
	pollUntil(t, "the member to join at the coordinator", func() bool {
		resp := heartbeat()
		if resp.ErrorCode != 0 && !retriable(resp.ErrorCode) {
			t.Fatalf("join at the coordinator %d: %v", coord, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.ErrorCode == 0
	})
	if len(owned) != 0 {
		t.Fatalf("assigned %v before any topic matches %s", owned, regex)
	}

	// The topic is created through a broker that is not the coordinator.
	other := tc.nodes[int(coord)%len(tc.nodes)] // the node after the coordinator
	var topicID [16]byte
	pollUntil(t, "rx-a to be created through another broker", func() bool {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "rx-a", 2, 3
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = 7
		rawRequest(t, other.addr, req, resp)
		if len(resp.Topics) != 1 {
			return false
		}
		switch resp.Topics[0].ErrorCode {
		case 0:
			topicID = resp.Topics[0].TopicID
			return true
		case kerr.TopicAlreadyExists.Code: // an earlier try's answer was lost: look its id up
			mreq := kmsg.NewPtrMetadataRequest()
			mreq.Version = 12
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr("rx-a")
			mreq.Topics = append(mreq.Topics, mt)
			mresp := kmsg.NewPtrMetadataResponse()
			mresp.Version = 12
			rawRequest(t, other.addr, mreq, mresp)
			if len(mresp.Topics) == 1 && mresp.Topics[0].ErrorCode == 0 {
				topicID = mresp.Topics[0].TopicID
				return true
			}
		}
		return false
	})
	pollUntil(t, "the member to be assigned both partitions of rx-a", func() bool {
		resp := heartbeat()
		if resp.ErrorCode != 0 && !retriable(resp.ErrorCode) {
			t.Fatalf("heartbeat at the coordinator %d: %v", coord, kerr.ErrorForCode(resp.ErrorCode))
		}
		return len(owned[topicID]) == 2
	})
}
