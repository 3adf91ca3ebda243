package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/quorum"
)

// benchQuorum is the quorum of a one-node controller for benchmarks of
// what it builds before it proposes.
type benchQuorum struct{}

func (benchQuorum) ID() uint64                            { return 1 }
func (benchQuorum) Leader() uint64                        { return 1 }
func (benchQuorum) Term() uint64                          { return 1 }
func (benchQuorum) Propose(context.Context, []byte) error { return nil }

// The unfencing of a one-node cluster restarted with 100,000 partitions
// (100 topics of 1,000): its clean shutdown left each of them leaderless,
// with no in-sync replica and the node as the eligible one (KIP-966); the
// unfencing gives each back to it (returnBroker) and withELR completes the
// changes (an election from the ELR). And the fencing of the same node
// (leaveBroker) once it leads them all.
func BenchmarkUnfenceManyPartitions(b *testing.B) {
	recs := []metadata.Record{{Type: metadata.SetClusterID, ClusterID: "bench"},
		{Type: metadata.SetFeatures, Features: map[string]int16{features.EligibleLeaderReplicasVersion: 1}},
		{Type: metadata.RegisterBroker, Broker: &metadata.BrokerRegistration{ID: 1, Incarnation: "i"}}}
	for t := 0; t < 100; t++ {
		tp := &metadata.Topic{Name: fmt.Sprintf("mp%03d", t), ID: metadata.ID{byte(t), 1}}
		for i := 0; i < 1000; i++ {
			tp.Partitions = append(tp.Partitions, metadata.Partition{Replicas: []int32{1}, ELR: []int32{1},
				Leader: metadata.NoLeader, LeaderEpoch: 3})
		}
		recs = append(recs, metadata.Record{Type: metadata.CreateTopic, Topic: tp})
	}
	im, skipped := metadata.Empty().Apply(1, metadata.Batch{Records: recs})
	if len(skipped) > 0 {
		b.Fatal(skipped)
	}
	if !elrEnabled(im) {
		b.Fatal("ELR not enabled")
	}
	// The controller's store, holding the same image.
	store := metadata.NewStore()
	if err := store.Apply([]quorum.Entry{{Index: 1, Data: metadata.Batch{Records: recs}.Encode()}}); err != nil {
		b.Fatal(err)
	}
	im = store.Image()
	b.Run("returnBroker", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n := len(returnBroker(im, 1)); n != 100_000 {
				b.Fatalf("%d changes", n)
			}
		}
	})
	b.Run("withELR", func(b *testing.B) {
		c := New(Config{Quorum: benchQuorum{}, Store: store})
		unfence := slices.Insert(returnBroker(im, 1), 0, metadata.Record{Type: metadata.UnfenceBroker, BrokerID: 1})
		b.ReportAllocs()
		for b.Loop() {
			out := c.withELR(unfence)
			if ch := out[len(out)-1].Change; ch.Leader != 1 || len(ch.ISR) != 1 {
				b.Fatalf("not elected: %+v", ch)
			}
		}
	})
	b.Run("leaveBroker", func(b *testing.B) {
		c := New(Config{Quorum: benchQuorum{}, Store: store})
		back, _ := im.Apply(2, metadata.Batch{Records: c.withELR(slices.Insert(returnBroker(im, 1), 0,
			metadata.Record{Type: metadata.UnfenceBroker, BrokerID: 1}))})
		b.ReportAllocs()
		for b.Loop() {
			if n := len(leaveBroker(back, 1)); n != 100_000 {
				b.Fatalf("%d changes", n)
			}
		}
	})
}
