package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/replica"
)

// DeleteRecords on a replicated partition answers, as Kafka does, once
// every live replica has moved its log start offset to the requested
// offset: each follower takes the leader's log start offset from its fetch
// answers and reports its own in its next Fetch, and the answer's
// low_watermark is the smallest over the replicas. So right after the
// answer every copy starts there.
func TestClusterDeleteRecordsReachesFollowers(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "trim"
	createTopicEventually(t, ctx, adm, topic, 1, 3, nil)
	waitTopicISR(t, adm, topic, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Value: []byte{byte('0' + i)}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	starts := func() []int64 {
		var out []int64
		for _, n := range tc.nodes {
			l := n.broker().Logs().Get(topic, 0)
			if l == nil {
				out = append(out, -1)
				continue
			}
			out = append(out, l.LogStartOffset())
		}
		return out
	}
	// live reports the nodes the partition's leader counts as live (it
	// waits only for them: a node fenced meanwhile under load is skipped).
	live := func() map[int]bool {
		out := map[int]bool{}
		for _, n := range tc.nodes {
			if p := n.broker().replicas.Get(topic, 0); p != nil && p.Role() == replica.Leader {
				for i := range tc.nodes {
					out[i] = n.broker().isLiveBroker(int32(i + 1))
				}
			}
		}
		return out
	}
	for _, c := range []struct{ ask, want int64 }{{5, 5}, {-1, 10}} {
		before := live()
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: topic, Partition: 0, At: c.ask})
		var got kadm.DeleteRecordsResponse
		pollUntilFor(t, 60*time.Second, "DeleteRecords to succeed", func() bool {
			res, err := adm.DeleteRecords(ctx, o)
			if err != nil {
				return false
			}
			r, ok := res.Lookup(topic, 0)
			got = r
			return ok && r.Err == nil
		})
		if got.LowWatermark != c.want {
			t.Fatalf("DeleteRecords(%d): low watermark %d, want %d", c.ask, got.LowWatermark, c.want)
		}
		after := live()
		for i, s := range starts() {
			if !before[i] || !after[i] {
				t.Logf("node %d was not live throughout (before %v, after %v): not checked", i+1, before[i], after[i])
				continue
			}
			if s < c.want {
				t.Fatalf("DeleteRecords(%d) answered, but node %d's copy starts at %d (all: %v)", c.ask, i+1, s, starts())
			}
		}
	}
}
