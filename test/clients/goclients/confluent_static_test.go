//go:build cgo

package goclients

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// staticLeaderRestart (KIP-345): the group's leader, a static member, restarts
// (same group.instance.id; librdkafka sends no LeaveGroup for a static member and
// rejoins with JoinGroup v5). Like Kafka, Sluice does not rebalance the Stable group:
// the other member sees no revocation and no new assignment, and the restarted member
// gets its old partition back.
func (s *confluentSuite) staticLeaderRestart(t *testing.T) {
	topic := uniqueName("ckg-static")
	group := uniqueName("ckg-static")
	s.createTopic(t, topic, 2, nil)

	type member struct {
		c       *kafka.Consumer
		mu      sync.Mutex
		events  int // rebalance callbacks (eager: every rebalance revokes and assigns)
		stop    chan struct{}
		stopped chan struct{}
	}
	start := func(instance string) *member {
		c, err := kafka.NewConsumer(s.config(kafka.ConfigMap{
			"group.id":                      group,
			"group.instance.id":             instance,
			"partition.assignment.strategy": "range",
			"session.timeout.ms":            6000,
			"heartbeat.interval.ms":         200,
			"auto.offset.reset":             "earliest",
			"enable.auto.commit":            false,
		}))
		if err != nil {
			t.Fatalf("NewConsumer: %v", err)
		}
		m := &member{c: c, stop: make(chan struct{}), stopped: make(chan struct{})}
		err = c.Subscribe(topic, func(c *kafka.Consumer, ev kafka.Event) error {
			m.mu.Lock()
			m.events++
			m.mu.Unlock()
			switch e := ev.(type) {
			case kafka.AssignedPartitions:
				return c.Assign(e.Partitions)
			case kafka.RevokedPartitions:
				return c.Unassign()
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		go func() {
			defer close(m.stopped)
			for {
				select {
				case <-m.stop:
					return
				default:
				}
				c.Poll(50)
			}
		}()
		return m
	}
	stopMember := func(m *member) {
		close(m.stop)
		<-m.stopped
		_ = m.c.Close()
	}
	owned := func(m *member) []int32 {
		as, _ := m.c.Assignment()
		var ps []int32
		for _, tp := range as {
			ps = append(ps, tp.Partition)
		}
		return ps
	}
	events := func(m *member) int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.events
	}

	a := start("static-a")
	waitFor(t, 20*time.Second, "the first member (the leader) owns both partitions", func() error {
		if n := len(owned(a)); n != 2 {
			return fmt.Errorf("it owns %d", n)
		}
		return nil
	})
	b := start("static-b")
	defer stopMember(b)
	waitFor(t, 20*time.Second, "one partition each", func() error {
		if na, nb := len(owned(a)), len(owned(b)); na != 1 || nb != 1 {
			return fmt.Errorf("leader owns %d, other %d", na, nb)
		}
		return nil
	})
	aPart := owned(a)[0]
	bEvents := events(b)

	stopMember(a) // a static member's close sends no LeaveGroup
	a2 := start("static-a")
	defer stopMember(a2)
	waitFor(t, 20*time.Second, "the restarted leader owns its old partition", func() error {
		if ps := owned(a2); len(ps) != 1 || ps[0] != aPart {
			return fmt.Errorf("it owns %v, want [%d]", ps, aPart)
		}
		return nil
	})
	if n := events(b); n != bEvents {
		t.Errorf("the other member saw a rebalance: %d rebalance callbacks, had %d", n, bEvents)
	}
	if n := len(owned(b)); n != 1 {
		t.Errorf("the other member owns %d partitions, want 1", n)
	}
}
