package metadata

import (
	"fmt"
	"testing"
)

// A batch of many changes to one topic (a broker's fencing moves every
// partition it leads) clones the topic once: every change lands, the image
// before the batch keeps its partitions, and a later batch clones again.
func TestApplyBatchOfPartitionChanges(t *testing.T) {
	const n = 1000
	leaders := make([]int32, n)
	for i := range leaders {
		leaders[i] = 1
	}
	im0, skipped := apply(t, Empty(), 1, topic("t", 1, leaders...))
	if len(skipped) != 0 {
		t.Fatal(skipped)
	}
	change := func(p int32, leader, epoch int32) Record {
		return Record{Type: ChangePartition, TopicName: "t", TopicID: ID{1}, Partition: p,
			Change: &Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch}}
	}
	var recs []Record
	for p := range int32(n) {
		recs = append(recs, change(p, NoLeader, 1))
	}
	recs = append(recs, change(3, 1, 2), // a second change of one partition in the same batch
		Record{Type: SetTopicConfigs, TopicName: "t", TopicID: ID{1}, Configs: map[string]string{"retention.ms": "1"}},
		Record{Type: AddPartitions, TopicName: "t", TopicID: ID{1}, Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}})
	im1, skipped := apply(t, im0, 2, recs...)
	if len(skipped) != 0 {
		t.Fatal(skipped)
	}
	t1 := im1.Topics["t"]
	if len(t1.Partitions) != n+1 || t1.Configs["retention.ms"] != "1" || im1.TopicsByID[ID{1}] != t1 {
		t.Fatalf("topic after the batch: %d partitions, configs %v", len(t1.Partitions), t1.Configs)
	}
	for p := range int32(n) {
		want := NoLeader
		if p == 3 {
			want = 1
		}
		if got := t1.Partitions[p].Leader; got != want {
			t.Fatalf("partition %d: leader %d, want %d", p, got, want)
		}
	}
	for p, part := range im0.Topics["t"].Partitions {
		if part.Leader != 1 || part.PartitionEpoch != 0 {
			t.Fatalf("the image before the batch changed: partition %d %+v", p, part)
		}
	}
	if len(im0.Topics["t"].Partitions) != n || len(im0.Topics["t"].Configs) != 0 {
		t.Fatal("the image before the batch changed")
	}
	// The next batch must not change the topic of the image it starts from.
	im2, skipped := apply(t, im1, 3, change(0, 1, 5))
	if len(skipped) != 0 || im2.Topics["t"].Partitions[0].Leader != 1 || t1.Partitions[0].Leader != NoLeader {
		t.Fatalf("next batch: skipped %v, leader %d, previous image's leader %d", skipped,
			im2.Topics["t"].Partitions[0].Leader, t1.Partitions[0].Leader)
	}
}

// BenchmarkApplyFencingBatch is one batch that changes every partition of
// 10 topics of 1,000 partitions each (what fencing a broker writes).
func BenchmarkApplyFencingBatch(b *testing.B) {
	im := Empty()
	var recs []Record
	for ti := range 10 {
		tp := &Topic{Name: fmt.Sprintf("t%d", ti), ID: ID{byte(ti + 1)}}
		for range 1000 {
			tp.Partitions = append(tp.Partitions, Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
		}
		im, _ = im.Apply(uint64(ti+1), Batch{Records: []Record{{Type: CreateTopic, Topic: tp}}})
		for p := range int32(1000) {
			recs = append(recs, Record{Type: ChangePartition, TopicName: tp.Name, TopicID: tp.ID, Partition: p,
				Change: &Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 1, PartitionEpoch: 1}})
		}
	}
	b.ReportAllocs()
	for range b.N {
		if _, skipped := im.Apply(100, Batch{Records: recs}); len(skipped) != 0 {
			b.Fatal(skipped)
		}
	}
}
