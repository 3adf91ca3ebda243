package metadata

import (
	"slices"
	"testing"
)

// attentionNames lists AttentionTopics' names.
func attentionNames(im *Image) []string {
	var out []string
	for _, t := range im.AttentionTopics() {
		out = append(out, t.Name)
	}
	return out
}

// wantAttention lists, by a full walk, the topics with a partition that needs
// the controller's attention.
func wantAttention(im *Image) []string {
	var out []string
	for _, t := range im.SortedTopics() {
		if im.topicNeedsAttention(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// The index of topics needing the controller's attention follows every kind
// of change: partitions losing and regaining a leader, reassignments
// starting and ending, brokers fenced and unfenced (which changes whose
// leader is live), topics created and removed, and images made otherwise
// (a snapshot's, or a copy given other brokers) fall back to every topic.
func TestAttentionTopics(t *testing.T) {
	im := Empty()
	off := uint64(0)
	step := func(what string, recs ...Record) {
		t.Helper()
		off++
		var skipped []string
		im, skipped = apply(t, im, off, recs...)
		if len(skipped) != 0 {
			t.Fatalf("%s: skipped %v", what, skipped)
		}
		if got, want := attentionNames(im), wantAttention(im); !slices.Equal(got, want) {
			t.Fatalf("%s: attention topics %v, want %v", what, got, want)
		}
	}
	step("register 1", reg(1, "a"))
	step("unfence 1", Record{Type: UnfenceBroker, BrokerID: 1, Epoch: 1})
	step("register 2", reg(2, "b"))
	step("unfence 2", Record{Type: UnfenceBroker, BrokerID: 2, Epoch: 3})
	step("create", topic("a", 1, 1, 1), topic("b", 2, 2), topic("c", 3, 1, 2))
	if got := attentionNames(im); len(got) != 0 {
		t.Fatalf("all led by live brokers: attention %v", got)
	}
	change := func(name string, id byte, p int32, np Partition) Record {
		return Record{Type: ChangePartition, TopicName: name, TopicID: ID{id}, Partition: p, Change: &np}
	}
	step("a-1 leaderless", change("a", 1, 1, Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 1, PartitionEpoch: 1}))
	step("c-0 reassigning", change("c", 3, 0, Partition{Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, PartitionEpoch: 1,
		AddingReplicas: []int32{2}, RemovingReplicas: []int32{1}}))
	step("a-1 led again", change("a", 1, 1, Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2}))
	step("fence 2", Record{Type: FenceBroker, BrokerID: 2, Epoch: 3}) // b-0 and c-1 led by a fenced broker
	if got := attentionNames(im); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after fencing 2: attention %v", got)
	}
	step("unfence 2 again", Record{Type: UnfenceBroker, BrokerID: 2, Epoch: 3})
	step("c-0 reassigned", change("c", 3, 0, Partition{Replicas: []int32{2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 2}))
	step("d leaderless at birth, c removed", Record{Type: CreateTopic, Topic: &Topic{Name: "d", ID: ID{4},
		Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1}, Leader: NoLeader}}}},
		Record{Type: RemoveTopic, TopicName: "c", TopicID: ID{3}})
	step("a grows by a leaderless partition", Record{Type: AddPartitions, TopicName: "a", TopicID: ID{1},
		Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1}, Leader: NoLeader}}})
	step("d removed", Record{Type: RemoveTopic, TopicName: "d", TopicID: ID{4}})
	if got := attentionNames(im); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("at the end: attention %v", got)
	}

	// A copy given other brokers, and an image not built by Apply, list
	// every topic.
	fenced := *im
	fenced.Brokers = map[int32]*BrokerRegistration{}
	if got := attentionNames(&fenced); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("copy with other brokers: %v", got)
	}
	restored := &Image{Topics: im.Topics, Brokers: im.Brokers}
	if got := attentionNames(restored); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("image not built by Apply: %v", got)
	}
	next, _ := restored.Apply(off+1, Batch{Records: []Record{{Type: Noop}}})
	if got := attentionNames(next); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first image applied after a restore: %v", got)
	}
}
