package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// On a cluster the group coordinator sends one ReadShareGroupState and one
// InitializeShareGroupState to each share coordinator of a group's
// partitions (the leaders of their __share_group_state partitions, itself
// and other brokers), each carrying all of that coordinator's partitions,
// and every partition is initialized at the first heartbeat.
func TestClusterShareInitStateOneRequestPerCoordinator(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"share.auto.offset.reset": "earliest"})
	cl := tc.client()
	const n = 30
	benchCreateTopicWithLeaders(t, cl, "cinit", n)
	// A first group creates __share_group_state; then every state partition
	// is loaded at its leader.
	shareJoinUntilAssigned(t, cl, "cinit-warm", "cinit", n)
	im := tc.nodes[0].broker().image()
	pollUntil(t, "every state partition loaded at its leader", func() bool {
		im = tc.nodes[0].broker().image()
		st, ok := im.Topics[ShareStateTopic]
		if !ok || len(st.Partitions) == 0 {
			return false
		}
		for p, ip := range st.Partitions {
			if ip.Leader < 1 || int(ip.Leader) > len(tc.nodes) || !tc.nodes[ip.Leader-1].broker().shareCoord.Leads(int32(p)) {
				return false
			}
		}
		return true
	})
	id := [16]byte(im.Topics["cinit"].ID)
	ns := int32(len(im.Topics[ShareStateTopic].Partitions))
	coords := map[int32]bool{}
	for p := range int32(n) {
		ip, _ := im.Partition(ShareStateTopic, share.Key{Group: "cinit-g", TopicID: id, Partition: p}.StatePartition(ns))
		coords[ip.Leader] = true
	}
	sent := func() (s int64) {
		for _, nd := range tc.nodes {
			s += nd.broker().shareStateRequests.Load()
		}
		return s
	}
	before := sent()
	// The first heartbeat the group coordinator serves initializes all.
	var j *kmsg.ShareGroupHeartbeatResponse
	pollUntil(t, "a heartbeat served by the group coordinator", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = "cinit-g", "m1aaaaaaaaaaaaaaaaaaaa", []string{"cinit"}
		r, err := req.RequestWith(ctx, cl)
		if err != nil || r.ErrorCode != 0 {
			return false
		}
		j = r
		return true
	})
	if j.Assignment == nil || len(j.Assignment.TopicPartitions) != 1 || len(j.Assignment.TopicPartitions[0].Partitions) != n {
		t.Fatalf("first heartbeat: %+v", j)
	}
	if got, want := sent()-before, int64(2*len(coords)); got != want {
		t.Fatalf("%d share-state requests for %d partitions at %d share coordinators, want %d", got, n, len(coords), want)
	}
	if len(coords) < 2 {
		t.Logf("the %d partitions have one share coordinator only: the remote path was not exercised", n)
	}
}
