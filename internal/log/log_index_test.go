package log

import (
	"fmt"
	"reflect"
	"testing"
)

func TestLogIndex(t *testing.T) {
	x := newLogIndex()
	logs := map[TopicPartition]*Log{}
	add := func(topic string, p int32) {
		tp := TopicPartition{topic, p}
		l := &Log{topic: topic, partition: p}
		x.set(tp, l)
		logs[tp] = l
	}
	add("b", 2)
	add("a", 0)
	add("b", 0)
	add("a", 5)
	if x.len() != 4 || x.get(TopicPartition{"b", 1}) != nil || x.get(TopicPartition{"b", 9}) != nil ||
		x.get(TopicPartition{"b", -1}) != nil || x.get(TopicPartition{"c", 0}) != nil {
		t.Fatal("absent partitions found, or a wrong count")
	}
	for tp, l := range logs {
		if x.get(tp) != l {
			t.Fatalf("%v not found", tp)
		}
	}
	want := []TopicPartition{{"a", 0}, {"a", 5}, {"b", 0}, {"b", 2}}
	if got := x.sorted(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sorted %v, want %v", got, want)
	}
	n := 0
	x.each(func(*Log) { n++ })
	if n != 4 {
		t.Fatalf("each visited %d", n)
	}
	if x.remove(TopicPartition{"b", 1}) != nil || x.remove(TopicPartition{"c", 0}) != nil || x.len() != 4 {
		t.Fatal("removed an absent partition")
	}
	if x.remove(TopicPartition{"a", 0}) != logs[TopicPartition{"a", 0}] || x.remove(TopicPartition{"a", 5}) == nil {
		t.Fatal("remove returned the wrong log")
	}
	if _, ok := x.topics["a"]; ok || x.len() != 2 {
		t.Fatal("a topic without logs kept")
	}
	if got := x.sorted(); !reflect.DeepEqual(got, []TopicPartition{{"b", 0}, {"b", 2}}) {
		t.Fatalf("after removal: %v", got)
	}
	add("a", 1) // a topic entered again
	if x.get(TopicPartition{"a", 1}) == nil || x.get(TopicPartition{"a", 0}) != nil || x.len() != 3 {
		t.Fatal("re-entered topic")
	}
}

// Looking up each of 100,000 partitions (100 topics of 1,000), as every
// pass at start does: the index against the map keyed by topic name and
// partition that it replaced.
func BenchmarkLogIndexLookups(b *testing.B) {
	x := newLogIndex()
	m := map[TopicPartition]*Log{}
	var tps []TopicPartition
	for t := 0; t < 100; t++ {
		for p := int32(0); p < 1000; p++ {
			tp := TopicPartition{fmt.Sprintf("many-partitions-topic-%03d", t), p}
			l := &Log{topic: tp.Topic, partition: p}
			x.set(tp, l)
			m[tp] = l
			tps = append(tps, tp)
		}
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			for _, tp := range tps {
				if x.get(tp) == nil {
					b.Fatal(tp)
				}
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			for _, tp := range tps {
				if m[tp] == nil {
					b.Fatal(tp)
				}
			}
		}
	})
}
