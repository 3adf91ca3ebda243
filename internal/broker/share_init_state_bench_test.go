package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkShareInitManyPartitions measures the share-partition state
// initialization of docs/performance.md ("Share groups with many
// partitions"): the time from a new share group's first heartbeat until its
// one member is assigned all 1,000 partitions of a topic, heartbeating again
// at once while fewer are assigned (ns/op), the heartbeats that took and the
// share-state requests the brokers sent to a share coordinator meanwhile
// (per op). A warm-up group on a one-partition topic has created
// __share_group_state (50 partitions) first; first-s is a first group on the
// 1,000-partition topic right after its creation, which competes with the
// creation of its logs (not in ns/op). On a single node and on a three-node
// in-process cluster (the topic's partitions spread over the nodes,
// replication factor 1; the state topic's replication factor 3). Run with
//
//	go test ./internal/broker/ -run '^$' -bench BenchmarkShareInitManyPartitions -benchtime 10x
func BenchmarkShareInitManyPartitions(b *testing.B) {
	const parts = 1000
	props := map[string]string{"share.auto.offset.reset": "earliest"}
	for _, mode := range []string{"single", "three-nodes"} {
		b.Run(mode, func(b *testing.B) {
			var nodes []*testBroker
			if mode == "single" {
				nodes = []*testBroker{startTestBroker(b, testOptions{Quiet: true, Props: props})}
			} else {
				nodes = startTestCluster(b, 3, props).nodes
			}
			var addrs []string
			for _, n := range nodes {
				addrs = append(addrs, n.addr)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequestTimeoutOverhead(3*time.Minute),
				kgo.RetryTimeout(time.Minute), kgo.MetadataMinAge(50*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			benchCreateTopicWithLeaders(b, cl, "warm", 1)
			benchCreateTopicWithLeaders(b, cl, "many", parts)
			shareJoinUntilAssigned(b, cl, "warm-up", "warm", 1)
			sent := func() int64 {
				var n int64
				for _, tb := range nodes {
					n += tb.broker().shareStateRequests.Load()
				}
				return n
			}
			t0 := time.Now()
			shareJoinUntilAssigned(b, cl, "first", "many", parts)
			first := time.Since(t0)
			b.ResetTimer()
			before, hbs := sent(), 0
			for i := range b.N {
				hbs += shareJoinUntilAssigned(b, cl, fmt.Sprintf("bench-%d", i), "many", parts)
			}
			b.StopTimer()
			b.ReportMetric(first.Seconds(), "first-s")
			b.ReportMetric(float64(hbs)/float64(b.N), "heartbeats/op")
			b.ReportMetric(float64(sent()-before)/float64(b.N), "state-requests/op")
		})
	}
}

// benchCreateTopicWithLeaders creates topic (partitions, replication factor
// 1) and waits until every partition has a leader.
func benchCreateTopicWithLeaders(b testing.TB, cl *kgo.Client, topic string, partitions int32) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		cr, err := req.RequestWith(ctx, cl)
		created := err == nil && len(cr.Topics) == 1 &&
			(cr.Topics[0].ErrorCode == 0 || cr.Topics[0].ErrorCode == kerr.TopicAlreadyExists.Code)
		led := 0
		if created {
			md := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(topic)
			md.Topics = append(md.Topics, mt)
			if mr, err := md.RequestWith(ctx, cl); err == nil && len(mr.Topics) == 1 && mr.Topics[0].ErrorCode == 0 {
				for _, p := range mr.Topics[0].Partitions {
					if p.ErrorCode == 0 && p.Leader >= 0 {
						led++
					}
				}
			}
		}
		cancel()
		if led == int(partitions) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("topic %s: %d of %d partitions with a leader (create err %v)", topic, led, partitions, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shareJoinUntilAssigned has a new member join share group (subscribing to
// topic) and heartbeat again at once until it is assigned want partitions;
// it returns the heartbeats sent.
func shareJoinUntilAssigned(b testing.TB, cl *kgo.Client, group, topic string, want int) int {
	b.Helper()
	member := fmt.Sprintf("%-22.22s", "member-"+group)
	epoch, hbs := int32(0), 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{topic}
		}
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		hbs++
		switch {
		case err != nil:
		case resp.ErrorCode == 0:
			epoch = resp.MemberEpoch
			if a := resp.Assignment; a != nil {
				n := 0
				for _, tp := range a.TopicPartitions {
					n += len(tp.Partitions)
				}
				if n == want {
					return hbs
				}
			}
		case resp.ErrorCode == kerr.NotCoordinator.Code || resp.ErrorCode == kerr.CoordinatorNotAvailable.Code ||
			resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code:
		case resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code:
			// A response the client gave up on moved the member on (or its
			// session ended meanwhile): it joins again, as a share consumer does.
			epoch = 0
		default:
			b.Fatalf("heartbeat of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not assigned %d partitions of %s after %d heartbeats (last err %v)", group, want, topic, hbs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
