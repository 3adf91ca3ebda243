package goclients

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Sarama scenarios beyond the basics: several members in one group, static
// membership, headers and timestamps, and the rest of its admin API.

func (s *saramaSuite) newClient(t *testing.T) sarama.Client {
	t.Helper()
	cl, err := sarama.NewClient([]string{s.tb.addr}, s.config())
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// claimTracker is a group handler that records each member's current claims
// and forwards records.
type claimTracker struct {
	member int
	mu     *sync.Mutex
	claims map[int][]int32
	out    chan<- record
}

func (h claimTracker) Setup(sess sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ps := range sess.Claims() {
		h.claims[h.member] = append([]int32(nil), ps...)
	}
	return nil
}

func (h claimTracker) Cleanup(sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.claims, h.member)
	return nil
}

func (h claimTracker) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	return saramaGroupHandler{out: h.out}.ConsumeClaim(sess, claim)
}

// twoMembers: two consumers share four partitions, each owning some, and
// between them read everything exactly once.
func (s *saramaSuite) twoMembers(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-2m")
	group := uniqueName("sarama-2m")
	s.createTopic(t, adm, topic, 4, nil)

	var mu sync.Mutex
	claims := map[int][]int32{}
	out := make(chan record, 256)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for m := 0; m < 2; m++ {
		cfg := s.config()
		cfg.Consumer.Offsets.AutoCommit.Enable = false
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRoundRobin()}
		cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
		cg, err := sarama.NewConsumerGroup([]string{s.tb.addr}, group, cfg)
		if err != nil {
			t.Fatalf("NewConsumerGroup: %v", err)
		}
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			defer cg.Close()
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, claimTracker{member: m, mu: &mu, claims: claims, out: out}); err != nil && ctx.Err() == nil {
					t.Errorf("member %d Consume: %v", m, err)
					return
				}
			}
		}(m)
	}
	waitFor(t, 20*time.Second, "both members own partitions", func() error {
		mu.Lock()
		defer mu.Unlock()
		seen := map[int32]int{}
		for m := 0; m < 2; m++ {
			if len(claims[m]) == 0 {
				return fmt.Errorf("member %d owns nothing (claims %v)", m, claims)
			}
			for _, p := range claims[m] {
				seen[p]++
			}
		}
		if len(seen) != 4 {
			return fmt.Errorf("claims %v do not cover 4 partitions", claims)
		}
		for p, n := range seen {
			if n != 1 {
				return fmt.Errorf("partition %d owned %d times: %v", p, n, claims)
			}
		}
		return nil
	})

	p := s.syncProducer(t, nil)
	const n = 40
	for i := 0; i < n; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder("v")}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	seen := map[string]bool{}
	timeout := time.After(15 * time.Second)
	for len(seen) < n {
		select {
		case r := <-out:
			id := fmt.Sprintf("%d/%d", r.partition, r.offset)
			if seen[id] {
				t.Errorf("record %s delivered twice", id)
			}
			seen[id] = true
		case <-timeout:
			t.Fatalf("group read %d of %d records", len(seen), n)
		}
	}
}

// staticMember: a member with group.instance.id that stops without leaving
// and comes back under the same id resumes at its commit.
func (s *saramaSuite) staticMember(t *testing.T) {
	if !s.version.IsAtLeast(sarama.V2_3_0_0) {
		t.Logf("sarama supports static membership from Kafka 2.3 on; not at %s", s.version)
		return
	}
	adm := s.admin(t)
	topic := uniqueName("sarama-static")
	group := uniqueName("sarama-static")
	s.createTopic(t, adm, topic, 2, nil)
	p := s.syncProducer(t, nil)
	for i := 0; i < 6; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	run := func(n int) []record {
		cfg := s.config()
		cfg.Consumer.Offsets.AutoCommit.Enable = false
		cfg.Consumer.Group.InstanceId = "static-member-1"
		cfg.Consumer.Group.Session.Timeout = 10 * time.Second
		cg, err := sarama.NewConsumerGroup([]string{s.tb.addr}, group, cfg)
		if err != nil {
			t.Fatalf("NewConsumerGroup: %v", err)
		}
		defer cg.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := make(chan record, 64)
		errc := make(chan error, 1)
		go func() {
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, saramaGroupHandler{out: out}); err != nil && ctx.Err() == nil {
					errc <- err
					return
				}
			}
		}()
		var got []record
		timeout := time.After(15 * time.Second)
		for len(got) < n {
			select {
			case r := <-out:
				got = append(got, r)
			case err := <-errc:
				t.Fatalf("static member Consume: %v", err)
			case <-timeout:
				t.Fatalf("static member read %d of %d records", len(got), n)
			}
		}
		return got
	}
	first := run(6)
	if len(first) != 6 {
		t.Fatalf("first run read %d records", len(first))
	}
	desc, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(desc) != 1 {
		t.Fatalf("DescribeConsumerGroups: %v %v", desc, err)
	}
	// A static member that closes does not leave: the group keeps it.
	if len(desc[0].Members) != 1 {
		t.Errorf("after the static member closed: %d members (state %s), want 1 kept", len(desc[0].Members), desc[0].State)
	} else {
		for _, m := range desc[0].Members {
			if m.GroupInstanceId == nil || *m.GroupInstanceId != "static-member-1" {
				t.Errorf("member instance id %v, want static-member-1", m.GroupInstanceId)
			}
		}
	}
	for i := 6; i < 10; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	second := run(4)
	var vals []string
	for _, r := range second {
		vals = append(vals, string(r.value))
	}
	sort.Strings(vals)
	if fmt.Sprint(vals) != "[6 7 8 9]" {
		t.Errorf("rejoined static member read %v, want [6 7 8 9]", vals)
	}
}

// headersTimestamps: record headers and CreateTime survive; a
// LogAppendTime topic stamps the broker's time; ListOffsets by time finds
// the first record at or after it.
func (s *saramaSuite) headersTimestamps(t *testing.T) {
	adm := s.admin(t)
	ct := uniqueName("sarama-ct")
	lat := uniqueName("sarama-lat")
	logAppend := "LogAppendTime"
	s.createTopic(t, adm, ct, 1, nil)
	s.createTopic(t, adm, lat, 1, map[string]*string{"message.timestamp.type": &logAppend})
	p := s.syncProducer(t, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 3; i++ {
		for _, topic := range []string{ct, lat} {
			_, _, err := p.SendMessage(&sarama.ProducerMessage{
				Topic:     topic,
				Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
				Value:     sarama.StringEncoder(fmt.Sprintf("v%d", i)),
				Headers:   []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(i))}, {Key: []byte("empty"), Value: nil}},
				Timestamp: base.Add(time.Duration(i) * time.Minute),
			})
			if err != nil {
				t.Fatalf("SendMessage %s: %v", topic, err)
			}
		}
	}
	after := time.Now()

	c, err := sarama.NewConsumer([]string{s.tb.addr}, s.config())
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer c.Close()
	for _, topic := range []string{ct, lat} {
		pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition: %v", err)
		}
		for i := 0; i < 3; i++ {
			var m *sarama.ConsumerMessage
			select {
			case m = <-pc.Messages():
			case err := <-pc.Errors():
				t.Fatalf("consume %s: %v", topic, err)
			case <-time.After(10 * time.Second):
				t.Fatalf("consume %s: record %d did not arrive", topic, i)
			}
			if len(m.Headers) != 2 || string(m.Headers[0].Key) != "h" || string(m.Headers[0].Value) != fmt.Sprint(i) || string(m.Headers[1].Key) != "empty" {
				t.Errorf("%s record %d headers: %+v", topic, i, m.Headers)
			}
			if topic == ct {
				if want := base.Add(time.Duration(i) * time.Minute); !m.Timestamp.Equal(want) {
					t.Errorf("CreateTime record %d: timestamp %v, want %v", i, m.Timestamp, want)
				}
			} else if m.Timestamp.Before(after.Add(-time.Minute)) || m.Timestamp.After(after.Add(time.Second)) {
				t.Errorf("LogAppendTime record %d: timestamp %v, want the broker's append time (~%v)", i, m.Timestamp, after)
			}
		}
		pc.Close()
	}

	cl := s.newClient(t)
	off, err := cl.GetOffset(ct, 0, base.Add(90*time.Second).UnixMilli())
	if err != nil {
		t.Fatalf("GetOffset by time: %v", err)
	}
	if off != 2 {
		t.Errorf("offset for time base+90s: %d, want 2", off)
	}
	if off, err := cl.GetOffset(ct, 0, sarama.OffsetNewest); err != nil || off != 3 {
		t.Errorf("GetOffset newest: %d %v, want 3", off, err)
	}
}

// adminMore: partitions, records, topics and group offsets through
// sarama's ClusterAdmin.
func (s *saramaSuite) adminMore(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-adm")
	s.createTopic(t, adm, topic, 1, nil)
	p := s.syncProducer(t, nil)
	for i := 0; i < 5; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}

	if err := adm.CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || len(md[0].Partitions) != 3 {
		t.Fatalf("DescribeTopics after CreatePartitions: %+v %v", md, err)
	}
	if err := adm.CreatePartitions(topic, 2, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
		t.Errorf("shrinking partitions: %v, want %v", err, sarama.ErrInvalidPartitions)
	}

	if err := adm.DeleteRecords(topic, map[int32]int64{0: 2}); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	cl := s.newClient(t)
	if off, err := cl.GetOffset(topic, 0, sarama.OffsetOldest); err != nil || off != 2 {
		t.Errorf("oldest offset after DeleteRecords: %d %v, want 2", off, err)
	}
	if got := s.consume(t, topic, 0, 3); got[0].offset != 2 || got[0].key != "2" {
		t.Errorf("first record after DeleteRecords: %+v, want offset 2", got[0])
	}

	lo, err := adm.ListOffsets(map[string]map[int32]int64{topic: {0: sarama.OffsetNewest, 1: sarama.OffsetOldest}}, nil)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	if r := lo[topic][0]; r == nil || r.Offset != 5 {
		t.Errorf("ListOffsets newest p0: %+v, want 5", r)
	}
	if r := lo[topic][1]; r == nil || r.Offset != 0 {
		t.Errorf("ListOffsets oldest p1: %+v, want 0", r)
	}

	dirs, err := adm.DescribeLogDirs([]int32{1})
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	found := false
	for _, d := range dirs[1] {
		for _, tp := range d.Topics {
			if tp.Topic == topic && len(tp.Partitions) == 3 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("DescribeLogDirs: topic %s with 3 partitions not listed: %+v", topic, dirs)
	}
	brokers, ctrl, err := adm.DescribeCluster()
	if err != nil || len(brokers) != 1 || ctrl != 1 {
		t.Errorf("DescribeCluster: %d brokers, controller %d, %v", len(brokers), ctrl, err)
	}

	group := uniqueName("sarama-adm")
	if _, err := adm.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{topic: {0: {Offset: 3, Metadata: "set by admin"}, 1: {Offset: 0}}}, nil); err != nil {
		t.Fatalf("AlterConsumerGroupOffsets: %v", err)
	}
	offs, err := adm.ListConsumerGroupOffsets(group, nil)
	if err != nil {
		t.Fatalf("ListConsumerGroupOffsets: %v", err)
	}
	if b := offs.GetBlock(topic, 0); b == nil || b.Offset != 3 || b.Metadata != "set by admin" {
		t.Errorf("committed p0: %+v, want 3 with metadata", b)
	}
	if s.version.IsAtLeast(sarama.V2_4_0_0) { // sarama's gate for OffsetDelete
		if err := adm.DeleteConsumerGroupOffset(group, topic, 1); err != nil {
			t.Errorf("DeleteConsumerGroupOffset: %v", err)
		}
		offs, err = adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
		if err != nil {
			t.Fatalf("ListConsumerGroupOffsets: %v", err)
		}
		if b := offs.GetBlock(topic, 1); b == nil || b.Offset != -1 {
			t.Errorf("p1 after DeleteConsumerGroupOffset: %+v, want -1", b)
		}
	}
	if err := adm.DeleteConsumerGroup(group); err != nil {
		t.Errorf("DeleteConsumerGroup: %v", err)
	}
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		t.Fatalf("ListConsumerGroups: %v", err)
	}
	if _, ok := groups[group]; ok {
		t.Errorf("group %s still listed after DeleteConsumerGroup", group)
	}

	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	waitFor(t, 10*time.Second, "topic gone", func() error {
		topics, err := adm.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; ok {
			return fmt.Errorf("%s still listed", topic)
		}
		return nil
	})
	if err := adm.DeleteTopic(topic); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("second DeleteTopic: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
	}
}
