package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// memberOfInstance is the member id of the member with instance id inst.
func memberOfInstance(ms []kadm.DescribedGroupMember, inst string) string {
	for _, m := range ms {
		if m.InstanceID != nil && *m.InstanceID == inst {
			return m.MemberID
		}
	}
	return ""
}

// staticConsumer is a franz-go group consumer with a group.instance.id that
// records its assignment and counts its rebalance callbacks.
type staticConsumer struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
	revokes  int
	assigns  int
}

func (c *staticConsumer) snapshot() (assigned []int32, revokes, assigns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.assigned {
		assigned = append(assigned, p)
	}
	return assigned, c.revokes, c.assigns
}

func startStaticConsumer(t *testing.T, tb *testBroker, group, topic, instance string, maxJoin int16) *staticConsumer {
	t.Helper()
	c := &staticConsumer{assigned: map[int32]bool{}}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.InstanceID(instance),
		kgo.Balancers(kgo.RangeBalancer()), // eager: any rebalance revokes everything
		kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.assigns++
			for _, p := range m[topic] {
				c.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.revokes++
			for _, p := range m[topic] {
				delete(c.assigned, p)
			}
		}),
	}
	if maxJoin >= 0 {
		v := kversion.Stable()
		v.SetMaxKeyVersion(kmsg.JoinGroup.Int16(), maxJoin)
		opts = append(opts, kgo.MaxVersions(v))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tb.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c.cl = cl
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KIP-345: a static member that was the group's leader restarts (same
// group.instance.id, no LeaveGroup) and rejoins a Stable group with
// unchanged protocols: no rebalance. The other member sees nothing (no
// revocation, no new assignment), the restarted one gets its old partition
// back under a new member id, at JoinGroup v5 (librdkafka's version: the
// old leader id is returned, so it runs no assignment) as at v9
// (SkipAssignment). The first member is the leader: it was alone in the
// group when it joined, and a rebalance keeps a leader that rejoins.
func TestStaticLeaderRestartDoesNotRebalance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxJoin int16
	}{{"JoinGroup v5", 5}, {"JoinGroup v9", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			tb := startTestBroker(t, testOptions{Props: groupProps()})
			createTestTopic(t, tb, "static", 2)
			const group = "static-group"

			a := startStaticConsumer(t, tb, group, "static", "instance-a", tc.maxJoin)
			waitUntil(t, "the first member's assignment", func() bool { p, _, _ := a.snapshot(); return len(p) == 2 })
			b := startStaticConsumer(t, tb, group, "static", "instance-b", tc.maxJoin)
			defer b.cl.Close()
			waitUntil(t, "one partition each", func() bool {
				pa, _, _ := a.snapshot()
				pb, _, _ := b.snapshot()
				return len(pa) == 1 && len(pb) == 1
			})
			aParts, _, _ := a.snapshot()
			_, bRevokes, bAssigns := b.snapshot()

			adm := tb.admin()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			before, err := adm.DescribeGroups(ctx, group)
			if err != nil || before.Error() != nil {
				t.Fatalf("describe: %v %v", err, before.Error())
			}

			// "Restart" a: a static member's Close sends no LeaveGroup.
			a.cl.Close()
			a2 := startStaticConsumer(t, tb, group, "static", "instance-a", tc.maxJoin)
			defer a2.cl.Close()
			waitUntil(t, "the restarted member's assignment", func() bool { p, _, _ := a2.snapshot(); return len(p) == 1 })
			if p, _, _ := a2.snapshot(); p[0] != aParts[0] {
				t.Fatalf("restarted member got partition %d, had %d", p[0], aParts[0])
			}
			if _, r, as := b.snapshot(); r != bRevokes || as != bAssigns {
				t.Fatalf("the other member saw a rebalance: revokes %d→%d, assigns %d→%d", bRevokes, r, bAssigns, as)
			}
			after, err := adm.DescribeGroups(ctx, group)
			if err != nil || after.Error() != nil {
				t.Fatalf("describe: %v %v", err, after.Error())
			}
			g := after[group]
			if g.State != "Stable" || len(g.Members) != 2 {
				t.Fatalf("group after restart: state %s, %d members", g.State, len(g.Members))
			}
			oldA, newA := memberOfInstance(before[group].Members, "instance-a"), memberOfInstance(g.Members, "instance-a")
			if newA == "" || newA == oldA {
				t.Fatalf("instance-a member id %q → %q, want a new one", oldA, newA)
			}
			if memberOfInstance(g.Members, "instance-b") != memberOfInstance(before[group].Members, "instance-b") {
				t.Fatal("instance-b's member id changed")
			}
		})
	}
}
