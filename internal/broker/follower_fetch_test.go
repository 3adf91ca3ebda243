package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// consumerFetchBytes reads sluice_consumer_fetch_bytes_total{role} of reg.
func consumerFetchBytes(t *testing.T, reg *prometheus.Registry, role string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_consumer_fetch_bytes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "role" && l.GetValue() == role {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no sluice_consumer_fetch_bytes_total{role=%q}", role)
	return 0
}

// TestClusterFollowerFetching: with RackAwareReplicaSelector, a consumer in
// rack-3 is sent by the leader (broker 1, rack-1) to broker 3 and reads
// everything there; the brokers' metrics show who served it. A follower
// answers consumer fetches with Kafka's epoch and offset errors.
func TestClusterFollowerFetching(t *testing.T) {
	tc := startTestClusterWith(t, 3, func(id int, _ []int) map[string]string {
		return map[string]string{"broker.rack": fmt.Sprintf("rack-%d", id),
			"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"}
	})
	waitImages(t, tc, "three live brokers", func(im *metadata.Image) bool { return len(im.LiveBrokers()) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createAssigned(t, ctx, tc, "ff", [][]int32{{1, 2, 3}}, nil)
	waitImages(t, tc, "ff led by 1, all in sync", func(im *metadata.Image) bool {
		p, ok := im.Partition("ff", 0)
		return ok && p.Leader == 1 && len(p.ISR) == 3
	})
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("ff"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	const total = 100
	var recs []*kgo.Record
	for i := range total {
		recs = append(recs, kgo.StringRecord(fmt.Sprintf("v%03d", i)))
	}
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.nodes {
		waitFor(t, "every replica's high watermark at the end", func() bool {
			l := n.broker().logs.Get("ff", 0)
			return l != nil && l.HighWatermark() == total
		})
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("ff"), kgo.Rack("rack-3"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d", got, total)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprintf("v%03d", r.Offset) {
				t.Fatalf("offset %d is %q", r.Offset, r.Value)
			}
			got++
		})
	}
	reg := func(i int) *prometheus.Registry { return tc.nodes[i].broker().metrics.Registry }
	if v := consumerFetchBytes(t, reg(2), "follower"); v <= 0 {
		t.Fatalf("broker 3 (rack-3) served %v bytes to the consumer as a follower", v)
	}
	if l, f := consumerFetchBytes(t, reg(0), "leader"), consumerFetchBytes(t, reg(1), "follower"); l != 0 || f != 0 {
		t.Fatalf("the leader served %v bytes and broker 2 %v bytes to a consumer in rack-3", l, f)
	}

	// A follower's answers to consumer fetches (Kafka's KIP-392 rules).
	ip, _ := tc.nodes[1].broker().image().Partition("ff", 0)
	fetch := func(version int16, offset int64, epoch int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(int16(kmsg.Fetch), version)
		one, err := kgo.NewClient(kgo.SeedBrokers(tc.nodes[1].addr), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "ff"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes, rp.LogStartOffset = offset, epoch, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, one)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch v%d: %v %+v", version, err, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		version int16
		offset  int64
		epoch   int32
		code    int16
	}{
		{12, 0, ip.LeaderEpoch, 0},
		{12, 0, -1, 0},
		{12, 0, ip.LeaderEpoch + 1, kerr.UnknownLeaderEpoch.Code},
		{12, total + 5, -1, kerr.OffsetOutOfRange.Code},
		{10, 0, -1, kerr.NotLeaderForPartition.Code},
	} {
		p := fetch(c.version, c.offset, c.epoch)
		if p.ErrorCode != c.code || (c.code == 0 && (p.HighWatermark != total || len(p.RecordBatches) == 0)) {
			t.Errorf("follower fetch %+v: code %d hw %d %d bytes", c, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
	}
}
