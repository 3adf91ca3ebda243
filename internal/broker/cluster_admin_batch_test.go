package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/peer"
)

// TestAdminBatchesPerTopicOutcomes: CreateTopics, CreatePartitions and
// DeleteTopics of many topics (one metadata entry each on a cluster node,
// cluster_admin_batch.go) still answer every topic on its own, in request
// order, on the default node and on the single-node path alike.
func TestAdminBatchesPerTopicOutcomes(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	create := kmsg.NewPtrCreateTopicsRequest()
	add := func(name string, parts int32) {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, 1
		create.Topics = append(create.Topics, rt)
	}
	for i := range 40 {
		add(fmt.Sprintf("batch-%02d", i), 2)
	}
	add("col.x", 1)
	add("col_x", 1)    // collides with the topic above, created in the same request
	add("bad/name", 1) // illegal
	add("zero", 0)
	cresp := tb.request(create).(*kmsg.CreateTopicsResponse)
	if len(cresp.Topics) != len(create.Topics) {
		t.Fatalf("%d results for %d topics", len(cresp.Topics), len(create.Topics))
	}
	for i, st := range cresp.Topics {
		want := int16(0)
		switch st.Topic {
		case "col_x", "bad/name":
			want = kerr.InvalidTopicException.Code
		case "zero":
			want = kerr.InvalidPartitions.Code
		}
		if st.Topic != create.Topics[i].Topic || st.ErrorCode != want {
			t.Fatalf("result %d: %s code %d, want %s code %d", i, st.Topic, st.ErrorCode, create.Topics[i].Topic, want)
		}
		if want == 0 {
			if got, ok := tb.broker().topics.Get(st.Topic); !ok || got.ID != st.TopicID || st.NumPartitions != create.Topics[i].NumPartitions {
				t.Fatalf("topic %s: %+v in the broker, answer %+v", st.Topic, got, st)
			}
		}
	}

	grow := kmsg.NewPtrCreatePartitionsRequest()
	for _, g := range []struct {
		name  string
		count int32
	}{{"batch-00", 4}, {"batch-01", 1}, {"nope", 3}, {"batch-02", 3}} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = g.name, g.count
		grow.Topics = append(grow.Topics, rt)
	}
	gresp := tb.request(grow).(*kmsg.CreatePartitionsResponse)
	for i, want := range []int16{0, kerr.InvalidPartitions.Code, kerr.UnknownTopicOrPartition.Code, 0} {
		if st := gresp.Topics[i]; st.Topic != grow.Topics[i].Topic || st.ErrorCode != want {
			t.Fatalf("create partitions %d: %s code %d, want %d", i, st.Topic, st.ErrorCode, want)
		}
	}
	for name, n := range map[string]int32{"batch-00": 4, "batch-01": 2, "batch-02": 3} {
		if got, _ := tb.broker().topics.Get(name); got == nil || got.Partitions != n {
			t.Fatalf("%s after CreatePartitions: %+v", name, got)
		}
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 5
	del.TopicNames = []string{"batch-00", "nope", "batch-01", "col.x"}
	for i := 3; i < 40; i++ {
		del.TopicNames = append(del.TopicNames, fmt.Sprintf("batch-%02d", i))
	}
	dresp := tb.request(del).(*kmsg.DeleteTopicsResponse)
	for i, st := range dresp.Topics {
		want := int16(0)
		if del.TopicNames[i] == "nope" {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if st.Topic == nil || *st.Topic != del.TopicNames[i] || st.ErrorCode != want {
			t.Fatalf("delete %d: %v code %d, want %s code %d", i, st.Topic, st.ErrorCode, del.TopicNames[i], want)
		}
		if _, ok := tb.broker().topics.Get(del.TopicNames[i]); ok {
			t.Fatalf("%s not deleted", del.TopicNames[i])
		}
	}
	if got, ok := tb.broker().topics.Get("batch-02"); !ok || got.Partitions != 3 {
		t.Fatal("a topic left out of the deletion is gone")
	}
}

// TestUnknownBatchMethod: only a batched method unknown to the quorum
// leader (an earlier release) makes the broker fall back to one topic at a
// time.
func TestUnknownBatchMethod(t *testing.T) {
	unknown := &peer.RemoteError{Code: "unknown-method", Message: "no controller method create-topics"}
	if !unknownBatchMethod("create-topics", unknown) || !unknownBatchMethod("delete-topics", fmt.Errorf("call: %w", unknown)) {
		t.Fatal("a batched method the controller does not know is not recognised")
	}
	if unknownBatchMethod("create-topic", unknown) {
		t.Fatal("an unknown per-topic method must keep being retried (NOT_CONTROLLER)")
	}
	if unknownBatchMethod("create-topics", &peer.RemoteError{Code: "41", Message: "not the controller"}) {
		t.Fatal("NOT_CONTROLLER taken for an earlier release")
	}
}
