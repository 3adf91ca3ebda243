//go:build cgo

package goclients

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// librdkafka's side of restart_test.go.

func TestConfluentBrokerRestart(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &confluentSuite{tb: tb}
	s.admin = s.newAdmin(t)
	topic := uniqueName("ckg-restart")
	group := uniqueName("ckg-restart")
	s.createTopic(t, topic, 2, nil)

	p := s.newProducer(t, kafka.ConfigMap{"enable.idempotence": true, "compression.type": "zstd"})
	batch := func(from, to int) []*kafka.Message {
		var msgs []*kafka.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 2)}, Value: []byte(fmt.Sprint(i))})
		}
		return msgs
	}
	produce(t, p, batch(0, 10))
	if got := len(s.groupRead(t, "classic", group, topic, 10)); got != 10 {
		t.Fatalf("first group run read %d", got)
	}
	// A KIP-848 group too: its offsets and group record must survive.
	group848 := group + "-848"
	if got := len(s.groupRead(t, "consumer", group848, topic, 10)); got != 10 {
		t.Fatalf("first consumer-protocol group run read %d", got)
	}

	tb.restart(t)

	for i, tp := range produce(t, p, batch(10, 20)) {
		if want := kafka.Offset(5 + i/2); tp.Offset != want {
			t.Errorf("record %d after restart at %d@%d, want offset %d", 10+i, tp.Partition, tp.Offset, want)
		}
	}
	select {
	case ev := <-p.Events():
		if e, ok := ev.(kafka.Error); ok && e.IsFatal() {
			t.Errorf("idempotent producer fatal error after restart: %v", e)
		}
	default:
	}
	for _, g := range []struct{ protocol, group string }{{"classic", group}, {"consumer", group848}} {
		var vals []string
		for _, r := range s.groupRead(t, g.protocol, g.group, topic, 10) {
			vals = append(vals, string(r.value))
		}
		sort.Strings(vals)
		if fmt.Sprint(vals) != "[10 11 12 13 14 15 16 17 18 19]" {
			t.Errorf("%s group after restart read %v, want exactly 10..19", g.protocol, vals)
		}
	}
	for part := int32(0); part < 2; part++ {
		seen := map[string]bool{}
		for _, r := range s.consume(t, topic, part, 10) {
			if seen[string(r.value)] {
				t.Errorf("partition %d: %q stored twice", part, r.value)
			}
			seen[string(r.value)] = true
		}
	}
}

// TestConfluentConsumerAcrossRestart keeps a consumer of each group
// protocol running while the broker restarts under it: it must rejoin on
// its own and go on from where it was, with no record lost or repeated.
func TestConfluentConsumerAcrossRestart(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"classic", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			liveConsumerAcrossRestart(t, protocol)
		})
	}
}

func liveConsumerAcrossRestart(t *testing.T, protocol string) {
	tb := startBroker(t)
	s := &confluentSuite{tb: tb}
	s.admin = s.newAdmin(t)
	topic := uniqueName("ckg-live-" + protocol)
	s.createTopic(t, topic, 2, nil)

	extra := kafka.ConfigMap{
		"group.id":           uniqueName("ckg-live-" + protocol),
		"group.protocol":     protocol,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
		"fetch.wait.max.ms":  100,
		"log_level":          0, // connection-refused noise while the broker is down
	}
	if protocol == "classic" {
		extra["session.timeout.ms"] = 6000
		extra["heartbeat.interval.ms"] = 300
	}
	c, err := kafka.NewConsumer(s.config(extra))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		errs []error
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			msg, err := c.ReadMessage(50 * time.Millisecond)
			if err != nil {
				continue
			}
			_, cerr := c.CommitMessage(msg)
			mu.Lock()
			seen[string(msg.Value)]++
			if cerr != nil {
				errs = append(errs, cerr)
			}
			mu.Unlock()
		}
	}()
	defer func() { close(stop); wg.Wait(); _ = c.Close() }()

	p := s.newProducer(t, kafka.ConfigMap{"enable.idempotence": true})
	send := func(from, to int) {
		var msgs []*kafka.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 2)}, Value: []byte(fmt.Sprint(i))})
		}
		produce(t, p, msgs)
	}
	waitAll := func(n int) {
		t.Helper()
		waitFor(t, 20*time.Second, fmt.Sprintf("consumer at %d records", n), func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != n {
				return fmt.Errorf("%d distinct records", len(seen))
			}
			return nil
		})
	}
	send(0, 6)
	waitAll(6)
	tb.restart(t)
	send(6, 12)
	waitAll(12) // nothing lost

	mu.Lock()
	defer mu.Unlock()
	var repeated []string
	for v, n := range seen {
		if n != 1 {
			repeated = append(repeated, fmt.Sprintf("%s x%d", v, n))
		}
	}
	sort.Strings(repeated)
	if len(repeated) == 0 {
		for _, err := range errs {
			t.Errorf("commit error: %v", err)
		}
		return
	}
	t.Errorf("records read more than once: %v (commit errors %v)", repeated, errs)
}
