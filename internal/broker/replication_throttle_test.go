package broker

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/metadata"
)

func TestReplicationQuota(t *testing.T) {
	if newReplicationQuota(0) != nil || newReplicationQuota(1<<63-1) != nil {
		t.Fatal("no rate (or Kafka's default, Long.MAX) must mean no quota")
	}
	var none *replicationQuota
	none.record(1<<30, time.Now())
	if none.exceeded(time.Now()) {
		t.Fatal("a nil quota is exceeded")
	}
	t0 := time.Unix(1_800_000_000, 0)
	q := newReplicationQuota(1000)
	if q.exceeded(t0) {
		t.Fatal("a fresh quota is exceeded")
	}
	q.record(600, t0)
	if q.exceeded(t0) {
		t.Fatal("exceeded after 600 of 1000 bytes")
	}
	q.record(600, t0)
	if !q.exceeded(t0) {
		t.Fatal("not exceeded after 1200 of 1000 bytes")
	}
	if !q.exceeded(t0.Add(100 * time.Millisecond)) {
		t.Fatal("100 bytes refilled cannot cover 200 owed")
	}
	if q.exceeded(t0.Add(300 * time.Millisecond)) {
		t.Fatal("still exceeded after the debt was refilled")
	}
	// At most one second's worth accumulates.
	q.record(0, t0.Add(time.Hour))
	q.record(1001, t0.Add(time.Hour))
	if !q.exceeded(t0.Add(time.Hour)) {
		t.Fatal("an idle hour let more than one second's worth through")
	}
}

func TestThrottledReplica(t *testing.T) {
	for _, c := range []struct {
		list      string
		partition int32
		broker    int32
		want      bool
	}{
		{"", 0, 1, false},
		{"*", 3, 2, true},
		{"0:1,1:2", 1, 2, true},
		{"0:1, 1:2", 1, 2, true},
		{"0:1,1:2", 1, 1, false},
		{"10:1", 1, 1, false},
	} {
		if got := throttledReplica(c.list, c.partition, c.broker); got != c.want {
			t.Errorf("throttledReplica(%q, %d, %d) = %v", c.list, c.partition, c.broker, got)
		}
	}
}

// Throttled replication (leader and follower quotas, every replica listed)
// still converges: the follower ends with every record.
func TestClusterThrottledReplication(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{
		"leader.replication.throttled.rate": "40000", "follower.replication.throttled.rate": "40000"})
	waitImages(t, tc, "three live brokers", func(im *metadata.Image) bool { return len(im.LiveBrokers()) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createAssigned(t, ctx, tc, "thr", [][]int32{{1, 2}}, map[string]string{
		"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "0:2"})
	waitImages(t, tc, "thr led by 1", func(im *metadata.Image) bool {
		p, ok := im.Partition("thr", 0)
		return ok && p.Leader == 1 && len(p.ISR) == 2
	})
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("thr"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var recs []*kgo.Record
	for range 40 {
		v := make([]byte, 1000)
		rand.Read(v) // incompressible
		recs = append(recs, &kgo.Record{Value: v})
	}
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// (At least 40 on the leader: the producer is not idempotent, a retry
	// after a timeout on a loaded box may have written a batch twice.)
	leo := tc.nodes[0].broker().logs.Get("thr", 0).LogEndOffset()
	waitFor(t, "the throttled follower to catch up", func() bool {
		l := tc.nodes[1].broker().logs.Get("thr", 0)
		return l != nil && l.LogEndOffset() == leo && leo >= 40
	})
}
