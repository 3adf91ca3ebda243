package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 consumer with a regex subscription (franz-go's ConsumeRegex sends
// ConsumerGroupHeartbeat's SubscribedTopicRegex): the broker resolves it against the
// existing topics, re-resolves it when topics are created or deleted, assigns the
// matching topics' partitions, and ConsumerGroupDescribe reports the regex.
func TestConsumerGroupRegexSubscription(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: groupProps()})
	createTestTopic(t, tb, "rx-a", 2)
	createTestTopic(t, tb, "rx-b", 1)
	createTestTopic(t, tb, "other", 1)
	prod := tb.client()
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		produceN(t, prod, topic, 0, 4)
	}

	var mu sync.Mutex
	got := map[string]int{}
	count := func(topic string) int { mu.Lock(); defer mu.Unlock(); return got[topic] }
	cl := tb.client(kgo.ConsumerGroup("rx"), kgo.ConsumeRegex(), kgo.ConsumeTopics("^rx-.*"),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond)) // a new partition joins the next fetch
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { mu.Lock(); got[r.Topic]++; mu.Unlock() })
		}
	}()
	waitFor(t, "the records of both matching topics", func() bool { return count("rx-a") == 4 && count("rx-b") == 4 })

	// A topic created later is picked up; a non-matching one never.
	createTestTopic(t, tb, "rx-c", 1)
	produceN(t, prod, "rx-c", 0, 3)
	waitFor(t, "the records of a matching topic created later", func() bool { return count("rx-c") == 3 })
	if n := count("other"); n != 0 {
		t.Fatalf("read %d records of a topic the regex does not match", n)
	}

	describe := func() kmsg.ConsumerGroupDescribeResponseGroupMember {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"rx"}
		resp := tb.request(req).(*kmsg.ConsumerGroupDescribeResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Members) != 1 {
			t.Fatalf("describe: %+v", resp.Groups)
		}
		return resp.Groups[0].Members[0]
	}
	assignedTopics := func(m kmsg.ConsumerGroupDescribeResponseGroupMember) map[string]int {
		out := map[string]int{}
		for _, tp := range m.Assignment.TopicPartitions {
			out[tp.Topic] += len(tp.Partitions)
		}
		return out
	}
	m := describe()
	if m.SubscribedTopicRegex == nil || *m.SubscribedTopicRegex == "" {
		t.Fatalf("describe does not report the regex: %+v", m)
	}
	if a := assignedTopics(m); a["rx-a"] != 2 || a["rx-b"] != 1 || a["rx-c"] != 1 || len(a) != 3 {
		t.Fatalf("assignment %v, want rx-a:2 rx-b:1 rx-c:1", a)
	}

	// A deleted topic leaves the assignment.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := tb.admin().DeleteTopics(ctx, "rx-b"); err != nil || r.Error() != nil {
		t.Fatalf("delete: %v %v", err, r.Error())
	}
	waitFor(t, "the deleted topic to leave the assignment", func() bool {
		a := assignedTopics(describe())
		return a["rx-b"] == 0 && a["rx-a"] == 2 && a["rx-c"] == 1
	})
}

// A regex consumer that joins before any topic matches gets the first matching topic
// once it is created.
func TestConsumerGroupRegexNoTopicYet(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: groupProps()})
	var mu sync.Mutex
	n := 0
	cl := tb.client(kgo.ConsumerGroup("late"), kgo.ConsumeRegex(), kgo.ConsumeTopics("^late-.*"),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		// franz-go joins only once its own metadata shows a matching topic.
		kgo.MetadataMinAge(50*time.Millisecond), kgo.MetadataMaxAge(200*time.Millisecond))
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			mu.Lock()
			n += fs.NumRecords()
			mu.Unlock()
		}
	}()
	createTestTopic(t, tb, "late-1", 2)
	produceN(t, tb.client(), "late-1", 0, 5)
	waitFor(t, "the records of the topic created after the consumer joined", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n == 5
	})
}
