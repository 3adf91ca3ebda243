package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Finding 12 of docs/reliability.md: committed offsets must survive the
// loss of the group coordinator's node, and a coordinator that has lost
// its controller (isolated, here: the two other nodes stopped, no quorum)
// must stop serving them (NOT_COORDINATOR) once its broker session would
// have expired, rather than answer OffsetFetch from a stale cache while
// another coordinator accepts commits. Likewise its partitions answer
// ListOffsets NOT_LEADER_OR_FOLLOWER rather than a stale high watermark
// (finding 11).
func TestClusterGroupOffsetsSurviveCoordinatorLoss(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 3, nil, "gf"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	const group = "gf-group"
	commit := func(adm *kadm.Client, at int64) {
		t.Helper()
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "gf", Partition: 0, At: at, LeaderEpoch: -1})
		deadline := time.Now().Add(60 * time.Second)
		for {
			res, err := adm.CommitOffsets(ctx, group, o)
			if err == nil && res.Error() == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("commit %d: %v %v", at, err, res.Error())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	fetch := func(adm *kadm.Client) int64 {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			res, err := adm.FetchOffsets(ctx, group)
			if err == nil && res.Error() == nil {
				if o, ok := res.Lookup("gf", 0); ok {
					return o.At
				}
				return -1
			}
			if time.Now().After(deadline) {
				t.Fatalf("fetch: %v %v", err, res.Error())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	coordinator := func(adm *kadm.Client) int32 {
		t.Helper()
		var id int32 = -1
		waitFor(t, "a group coordinator", func() bool {
			res := adm.FindGroupCoordinators(ctx, group)
			r, ok := res[group]
			if !ok || r.Err != nil {
				return false
			}
			id = r.NodeID
			return true
		})
		return id
	}
	for at := int64(10); at <= 50; at += 10 {
		commit(adm, at)
	}
	if got := fetch(adm); got != 50 {
		t.Fatalf("committed 50, fetched %d", got)
	}
	first := coordinator(adm)
	tc.nodes[first-1].stop()
	adm = tc.admin()
	if got := fetch(adm); got != 50 {
		t.Fatalf("committed 50 through node %d, fetched %d after it stopped", first, got)
	}
	commit(adm, 60)
	second := coordinator(adm)
	if second == first {
		t.Fatalf("node %d, stopped, is still the coordinator", first)
	}

	// Isolate the new coordinator from the controller: stop the third node
	// (no quorum, no heartbeat can succeed).
	for i, n := range tc.nodes {
		if int32(i+1) != first && int32(i+1) != second {
			n.stop()
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.nodes[second-1].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	br := cl.Broker(int(second))
	waitFor(t, fmt.Sprintf("node %d, without a controller, to stop coordinating %s", second, group), func() bool {
		req := kmsg.NewPtrOffsetFetchRequest() // v8+: groups
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		req.Groups = append(req.Groups, rg)
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		resp, err := br.Request(rctx, req)
		if err != nil {
			return false
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if len(r.Groups) != 1 {
			return false
		}
		return r.Groups[0].ErrorCode == kerr.NotCoordinator.Code
	})
	waitFor(t, fmt.Sprintf("node %d, without a controller, to stop answering ListOffsets as leader", second), func() bool {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "gf"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = 0
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		resp, err := br.Request(rctx, req)
		if err != nil {
			return false
		}
		r := resp.(*kmsg.ListOffsetsResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return false
		}
		return r.Topics[0].Partitions[0].ErrorCode == kerr.NotLeaderForPartition.Code
	})
}
