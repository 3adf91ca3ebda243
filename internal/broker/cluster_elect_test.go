package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// TestClusterUncleanElection: two topics on brokers {1,2}; broker 2 stops,
// more records go to broker 1 alone, broker 1 stops, broker 2 returns.
// The topic with unclean.leader.election.enable=true gets broker 2 as its
// leader (losing the records only broker 1 had); the other stays offline
// until ElectLeaders UNCLEAN. When broker 1 returns it truncates, rejoins,
// and a preferred election gives it the leadership back.
func TestClusterUncleanElection(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "3000", "auto.leader.rebalance.enable": "false"})
	waitImages(t, tc, "three live brokers", func(im *metadata.Image) bool { return len(im.LiveBrokers()) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	createAssigned(t, ctx, tc, "u", [][]int32{{1, 2}}, map[string]string{"unclean.leader.election.enable": "true"})
	createAssigned(t, ctx, tc, "c", [][]int32{{1, 2}}, nil)
	led := func(topic string, leader int32, isr int) func(*metadata.Image) bool {
		return func(im *metadata.Image) bool {
			p, ok := im.Partition(topic, 0)
			return ok && p.Leader == leader && (isr == 0 || len(p.ISR) == isr)
		}
	}
	waitImages(t, tc, "u and c led by 1 with two in sync", func(im *metadata.Image) bool { return led("u", 1, 2)(im) && led("c", 1, 2)(im) })
	produce := func(topic string, from, n int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			recs = append(recs, kgo.StringRecord(fmt.Sprint(i)))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topic, err)
		}
	}
	produce("u", 0, 10)
	produce("c", 0, 10)
	for _, topic := range []string{"u", "c"} {
		waitFor(t, "broker 2 to hold "+topic, func() bool {
			l := tc.nodes[1].broker().logs.Get(topic, 0)
			return l != nil && l.LogEndOffset() == 10 && l.HighWatermark() == 10
		})
	}

	dir2 := tc.nodes[1].opts.DataDir
	tc.nodes[1].stop()
	// Its high watermarks were checkpointed at shutdown.
	data, err := os.ReadFile(filepath.Join(dir2, hwCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if hw, err := decodeHWCheckpoint(data); err != nil || hw.Map()[log.TopicPartition{Topic: "u", Partition: 0}] != 10 ||
		hw.Map()[log.TopicPartition{Topic: "c", Partition: 0}] != 10 {
		t.Fatalf("broker 2's checkpoint %q: %v", data, err)
	}
	waitImages(t, tc, "broker 2 out of the in-sync sets", func(im *metadata.Image) bool { return led("u", 1, 1)(im) && led("c", 1, 1)(im) })
	produce("u", 10, 5) // only broker 1 has these
	produce("c", 10, 5)
	dir1 := tc.nodes[0].opts.DataDir
	tc.nodes[0].stop() // no quorum until broker 2 is back
	tc.nodes[1].opts.DataDir = dir2
	tc.nodes[1].start()
	waitImages(t, tc, "broker 1 fenced, u led by 2 (unclean), c offline", func(im *metadata.Image) bool {
		return !im.IsLive(1) && im.IsLive(2) && led("u", 2, 1)(im) && led("c", metadata.NoLeader, 0)(im)
	})
	// Eligible leader replicas (KIP-966, on in a new cluster): broker 1,
	// fenced, left the in-sync set and is c's only eligible leader.
	if p, _ := tc.nodes[1].broker().image().Partition("c", 0); len(p.ISR) != 0 || fmt.Sprint(p.ELR) != "[1]" {
		t.Fatalf("c without unclean election: %+v", p)
	}
	adm := tc.admin()
	res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"c": {0: {}}})
	if err != nil || res["c"][0].Err != nil {
		t.Fatalf("unclean ElectLeaders: %v %+v", err, res)
	}
	waitImages(t, tc, "c led by 2", led("c", 2, 1))
	if l := tc.nodes[1].broker().logs.Get("u", 0); l.LogEndOffset() != 10 {
		t.Fatalf("u on its unclean leader ends at %d, want 10", l.LogEndOffset())
	}
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"c": {0: {}}})
	if err != nil || res["c"][0].Err != kerr.ElectionNotNeeded {
		t.Fatalf("unclean ElectLeaders with a live leader: %v %+v", err, res)
	}
	produce("u", 100, 1) // offset 10 on the new leader

	// Broker 1 returns: it truncates its divergent records, rejoins, and
	// the preferred election gives it the leadership back.
	tc.nodes[0].opts.DataDir = dir1
	tc.nodes[0].start()
	adm = tc.admin()
	waitImages(t, tc, "broker 1 in sync again", func(im *metadata.Image) bool { return led("u", 2, 2)(im) && led("c", 2, 2)(im) })
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"u": {0: {}}})
	if err != nil || res["u"][0].Err != nil {
		t.Fatalf("preferred ElectLeaders: %v %+v", err, res)
	}
	waitImages(t, tc, "u led by 1 again", led("u", 1, 2))
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("u"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < 11 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9 100]" {
		t.Fatalf("u after the unclean election and broker 1's return: %v", got)
	}
}
