package metadata

import (
	"fmt"
	"testing"
	"time"
)

// bigImage is an image of 1,000 topics with partitions/1000 partitions
// each, replication factor 3 over 30 brokers, with a few configs per topic.
func bigImage(partitions int) *Image {
	im := Empty()
	var recs []Record
	for i := int32(1); i <= 30; i++ {
		recs = append(recs, reg(i, fmt.Sprintf("inc-%d", i)))
	}
	const topics = 1000
	for ti := range topics {
		t := &Topic{Name: fmt.Sprintf("topic-%04d", ti), ID: ID{byte(ti), byte(ti >> 8), 1},
			Configs: map[string]string{"retention.ms": "604800000", "cleanup.policy": "delete", "min.insync.replicas": "2"}}
		for p := range partitions / topics {
			r := []int32{int32(1 + (ti+p)%30), int32(1 + (ti+p+1)%30), int32(1 + (ti+p+2)%30)}
			t.Partitions = append(t.Partitions, Partition{Replicas: r, ISR: r, Leader: r[0], LeaderEpoch: 3, PartitionEpoch: 5})
		}
		recs = append(recs, Record{Type: CreateTopic, Topic: t})
	}
	im, _ = im.Apply(1, Batch{Records: recs})
	return im
}

// BenchmarkSnapshot reports the metadata snapshot's size (what a lagging
// node receives in one message) at 10,000 and 100,000 partitions, and how
// long taking and restoring it takes.
//
//	go test ./internal/metadata/ -run '^$' -bench Snapshot -benchtime 3x
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			s := NewStore()
			s.publish(bigImage(n))
			var data []byte
			var restore time.Duration
			for b.Loop() {
				var err error
				if data, err = s.Snapshot(); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := NewStore().Restore(data); err != nil {
					b.Fatal(err)
				}
				restore += time.Since(start)
			}
			b.ReportMetric(float64(len(data))/(1<<20), "MiB")
			b.ReportMetric(float64(restore.Milliseconds())/float64(b.N), "restore-ms/op")
		})
	}
}
