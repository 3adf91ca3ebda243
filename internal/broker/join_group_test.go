package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupProps makes group tests fast: few __consumer_offsets partitions, no initial
// rebalance delay, short KIP-848 heartbeats.
func groupProps() map[string]string {
	return map[string]string{
		"offsets.topic.num.partitions":             "4",
		"group.initial.rebalance.delay.ms":         "0",
		"group.consumer.heartbeat.interval.ms":     "200",
		"group.consumer.min.heartbeat.interval.ms": "100",
		"group.consumer.session.timeout.ms":        "45000",
		"group.consumer.min.session.timeout.ms":    "6000",
	}
}

func createTestTopic(t *testing.T, tb *testBroker, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tb.admin().CreateTopic(ctx, partitions, 1, nil, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

func produceN(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// groupConsumer is one kgo group member that records what it consumed and commits
// after every poll.
type groupConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

type consumedSet struct {
	mu   sync.Mutex
	seen map[string]bool // topic/partition/offset
}

func (s *consumedSet) add(r *kgo.Record) {
	s.mu.Lock()
	s.seen[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)] = true
	s.mu.Unlock()
}

func (s *consumedSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func startGroupConsumer(t *testing.T, tb *testBroker, groupID, topic string, seen *consumedSet, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	base := []kgo.Opt{
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			_ = cl.CommitMarkedOffsets(ctx)
		}),
		kgo.AutoCommitMarks(),
		kgo.BlockRebalanceOnPoll(),
	}
	cl := tb.client(append(base, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	gc := &groupConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(gc.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				seen.add(r)
				cl.MarkCommitRecords(r)
			})
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = cl.CommitMarkedOffsets(cctx)
			ccancel()
			cl.AllowRebalance()
		}
	}()
	return gc
}

// stop commits what was consumed and leaves the group.
func (gc *groupConsumer) stop() {
	gc.cancel()
	<-gc.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = gc.cl.CommitMarkedOffsets(ctx)
	gc.cl.AllowRebalance()
	gc.cl.Close()
}

// TestGroupDoneWhen is issue #5's "done when" scenario, run with the client-side
// cooperative-sticky assignor, the eager range assignor and the KIP-848 protocol.
func TestGroupDoneWhen(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"cooperative-sticky", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{"eager-range", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"kip848-uniform", []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) { runDoneWhen(t, tc.opts) })
	}
}

func runDoneWhen(t *testing.T, opts []kgo.Opt) {
	tb := startTestBroker(t, testOptions{Props: groupProps()})
	const topic, groupID = "orders", "g"
	createTestTopic(t, tb, topic, 4)
	prod := tb.client()
	seen := &consumedSet{seen: make(map[string]bool)}

	produceN(t, prod, topic, 0, 200)
	c1 := startGroupConsumer(t, tb, groupID, topic, seen, opts...)
	c2 := startGroupConsumer(t, tb, groupID, topic, seen, opts...)
	waitFor(t, "first 200 records", func() bool { return seen.len() >= 200 })

	c3 := startGroupConsumer(t, tb, groupID, topic, seen, opts...)
	produceN(t, prod, topic, 200, 200)
	waitFor(t, "400 records", func() bool { return seen.len() >= 400 })
	waitForMembers(t, tb, groupID, 3)

	c2.stop()
	produceN(t, prod, topic, 400, 200)
	waitFor(t, "600 records", func() bool { return seen.len() >= 600 })
	c1.stop()
	c3.stop()
	if seen.len() != 600 {
		t.Fatalf("consumed %d distinct records, want 600", seen.len())
	}

	adm := tb.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		if !ok || c.At != o.Offset {
			t.Errorf("partition %d: committed %v (found %v), end %d", o.Partition, c.At, ok, o.Offset)
		}
	})
	waitForEmpty(t, tb, groupID)

	// Restart: the group and its offsets are loaded from __consumer_offsets, and a new
	// member resumes exactly after the last commit.
	tb.restart()
	prod = tb.client()
	produceN(t, prod, topic, 600, 40)
	after := &consumedSet{seen: make(map[string]bool)}
	c4 := startGroupConsumer(t, tb, groupID, topic, after, opts...)
	waitFor(t, "40 new records after restart", func() bool { return after.len() >= 40 })
	c4.stop()
	after.mu.Lock()
	defer after.mu.Unlock()
	for k := range after.seen {
		var tp string
		var p int32
		var off int64
		fmt.Sscanf(k, "%s", &tp)
		if _, err := fmt.Sscanf(k, topic+"/%d/%d", &p, &off); err != nil {
			t.Fatalf("parse %q: %v", k, err)
		}
		end, _ := ends.Lookup(topic, p)
		if off < end.Offset {
			t.Errorf("after restart consumed %s, before the committed offset %d", k, end.Offset)
		}
	}
	if len(after.seen) != 40 {
		t.Errorf("after restart consumed %d records, want exactly the 40 new ones", len(after.seen))
	}
}

func waitForMembers(t *testing.T, tb *testBroker, groupID string, n int) {
	t.Helper()
	adm := tb.admin()
	waitFor(t, fmt.Sprintf("%d members in %s", n, groupID), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if dg, err := adm.DescribeGroups(ctx, groupID); err == nil {
			if g, ok := dg[groupID]; ok && g.Err == nil && len(g.Members) == n && g.State == "Stable" {
				return true
			}
		}
		cg, err := adm.DescribeConsumerGroups(ctx, groupID)
		if err != nil {
			return false
		}
		g, ok := cg[groupID]
		return ok && g.Err == nil && len(g.Members) == n
	})
}

func waitForEmpty(t *testing.T, tb *testBroker, groupID string) {
	t.Helper()
	adm := tb.admin()
	waitFor(t, groupID+" Empty", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lg, err := adm.ListGroups(ctx)
		if err != nil {
			return false
		}
		g, ok := lg[groupID]
		return ok && g.State == "Empty"
	})
}
