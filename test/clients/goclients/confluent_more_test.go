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

// librdkafka scenarios beyond the basics: two members sharing partitions
// (classic cooperative-sticky and KIP-848), timestamps and offsets by time,
// and the rest of the AdminClient.

// twoMembers runs two consumers of one group over four partitions until
// each owns two, then checks that together they read every record once.
func (s *confluentSuite) twoMembers(t *testing.T, protocol string) {
	topic := uniqueName("ckg-2m-" + protocol)
	group := uniqueName("ckg-2m-" + protocol)
	s.createTopic(t, topic, 4, nil)

	type member struct {
		c    *kafka.Consumer
		mu   sync.Mutex
		recs []record
	}
	members := make([]*member, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range members {
		extra := kafka.ConfigMap{
			"group.id":           group,
			"group.protocol":     protocol,
			"auto.offset.reset":  "earliest",
			"enable.auto.commit": false,
			"fetch.wait.max.ms":  100,
		}
		if protocol == "classic" {
			extra["partition.assignment.strategy"] = "cooperative-sticky"
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
		m := &member{c: c}
		members[i] = m
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
					continue // timeouts; real errors surface as missing records
				}
				m.mu.Lock()
				m.recs = append(m.recs, record{partition: msg.TopicPartition.Partition, offset: int64(msg.TopicPartition.Offset), key: string(msg.Key), value: msg.Value})
				m.mu.Unlock()
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		for _, m := range members {
			_ = m.c.Close()
		}
	}()

	waitFor(t, 20*time.Second, "two members own two partitions each", func() error {
		owner := map[int32]int{}
		for i, m := range members {
			as, err := m.c.Assignment()
			if err != nil {
				return err
			}
			if len(as) != 2 {
				return fmt.Errorf("member %d owns %d partitions", i, len(as))
			}
			for _, tp := range as {
				if prev, dup := owner[tp.Partition]; dup {
					return fmt.Errorf("partition %d owned by members %d and %d", tp.Partition, prev, i)
				}
				owner[tp.Partition] = i
			}
		}
		return nil
	})

	p := s.newProducer(t, nil)
	const n = 40
	var msgs []*kafka.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 4)}, Value: []byte(fmt.Sprint(i))})
	}
	produce(t, p, msgs)
	waitFor(t, 15*time.Second, "members read every record", func() error {
		seen := map[string]int{}
		total := 0
		for _, m := range members {
			m.mu.Lock()
			for _, r := range m.recs {
				seen[fmt.Sprintf("%d/%d", r.partition, r.offset)]++
				total++
			}
			m.mu.Unlock()
		}
		if total != n || len(seen) != n {
			return fmt.Errorf("%d records read, %d distinct, want %d", total, len(seen), n)
		}
		return nil
	})
	for i, m := range members {
		m.mu.Lock()
		if len(m.recs) == 0 {
			t.Errorf("member %d read nothing", i)
		}
		m.mu.Unlock()
	}
}

// timestamps: CreateTime kept, LogAppendTime stamped (and reported as such),
// offsets by time and max-timestamp through consumer and admin.
func (s *confluentSuite) timestamps(t *testing.T) {
	ct := uniqueName("ckg-ct")
	lat := uniqueName("ckg-lat")
	s.createTopic(t, ct, 1, nil)
	s.createTopic(t, lat, 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	p := s.newProducer(t, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	// Timestamps out of order: the max is at offset 1.
	stamps := []time.Time{base, base.Add(3 * time.Minute), base.Add(time.Minute)}
	for _, topic := range []string{ct, lat} {
		var msgs []*kafka.Message
		for i, ts := range stamps {
			msgs = append(msgs, &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
				Value:          []byte(fmt.Sprint(i)),
				Timestamp:      ts,
				Headers:        []kafka.Header{{Key: "i", Value: []byte(fmt.Sprint(i))}},
			})
		}
		produce(t, p, msgs)
	}
	after := time.Now()

	c, err := kafka.NewConsumer(s.config(kafka.ConfigMap{"group.id": uniqueName("ckg-ts"), "enable.auto.commit": false, "fetch.wait.max.ms": 100}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{
		{Topic: &ct, Partition: 0, Offset: kafka.OffsetBeginning},
		{Topic: &lat, Partition: 0, Offset: kafka.OffsetBeginning},
	}); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	for _, m := range readMessages(t, c, 6, 15*time.Second) {
		i := int(m.TopicPartition.Offset)
		if len(m.Headers) != 1 || string(m.Headers[0].Value) != fmt.Sprint(i) {
			t.Errorf("%v headers %v", m.TopicPartition, m.Headers)
		}
		if *m.TopicPartition.Topic == ct {
			if m.TimestampType != kafka.TimestampCreateTime || !m.Timestamp.Equal(stamps[i]) {
				t.Errorf("CreateTime record %d: %v %v, want %v", i, m.TimestampType, m.Timestamp, stamps[i])
			}
		} else if m.TimestampType != kafka.TimestampLogAppendTime || m.Timestamp.Before(after.Add(-time.Minute)) || m.Timestamp.After(after.Add(time.Second)) {
			t.Errorf("LogAppendTime record %d: %v %v, want LogAppendTime near %v", i, m.TimestampType, m.Timestamp, after)
		}
	}

	low, high, err := c.QueryWatermarkOffsets(ct, 0, 10000)
	if err != nil || low != 0 || high != 3 {
		t.Errorf("QueryWatermarkOffsets: %d %d %v, want 0 3", low, high, err)
	}
	times, err := c.OffsetsForTimes([]kafka.TopicPartition{{Topic: &ct, Partition: 0, Offset: kafka.Offset(base.Add(30 * time.Second).UnixMilli())}}, 10000)
	if err != nil || len(times) != 1 || times[0].Offset != 1 {
		t.Errorf("OffsetsForTimes base+30s: %v %v, want offset 1 (first record at or after)", times, err)
	}

	res, err := s.admin.ListOffsets(ctxTimeout(t, 10*time.Second), map[kafka.TopicPartition]kafka.OffsetSpec{
		{Topic: &ct, Partition: 0}: kafka.MaxTimestampOffsetSpec,
	})
	if err != nil {
		t.Fatalf("ListOffsets max-timestamp: %v", err)
	}
	for tp, info := range res.ResultInfos {
		if info.Error.Code() != kafka.ErrNoError || info.Offset != 1 || info.Timestamp != stamps[1].UnixMilli() {
			t.Errorf("ListOffsets max-timestamp %v: offset %d ts %d err %v, want offset 1 ts %d", tp, info.Offset, info.Timestamp, info.Error, stamps[1].UnixMilli())
		}
	}
}

// adminMore: CreatePartitions, DeleteRecords, ListOffsets, group offsets,
// DeleteConsumerGroups, DeleteTopics.
func (s *confluentSuite) adminMore(t *testing.T) {
	topic := uniqueName("ckg-adm")
	s.createTopic(t, topic, 1, nil)
	p := s.newProducer(t, nil)
	var msgs []*kafka.Message
	for i := 0; i < 5; i++ {
		msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))})
	}
	produce(t, p, msgs)
	ctx := ctxTimeout(t, 20*time.Second)

	cp, err := s.admin.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 3}})
	if err != nil || len(cp) != 1 || cp[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreatePartitions: %v %v", cp, err)
	}
	cp, err = s.admin.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 2}})
	if err != nil || len(cp) != 1 || cp[0].Error.Code() != kafka.ErrInvalidPartitions {
		t.Errorf("shrinking partitions: %v %v, want %v", cp, err, kafka.ErrInvalidPartitions)
	}

	dr, err := s.admin.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 2}})
	if err != nil || len(dr.DeleteRecordsResults) != 1 {
		t.Fatalf("DeleteRecords: %+v %v", dr, err)
	}
	if r := dr.DeleteRecordsResults[0]; r.TopicPartition.Error != nil || r.DeletedRecords == nil || r.DeletedRecords.LowWatermark != 2 {
		t.Errorf("DeleteRecords result: %+v, want low watermark 2", r)
	}
	lo, err := s.admin.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{
		{Topic: &topic, Partition: 0}: kafka.EarliestOffsetSpec,
	})
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	for tp, info := range lo.ResultInfos {
		if info.Offset != 2 {
			t.Errorf("earliest offset of %v after DeleteRecords: %d (%v), want 2", tp, info.Offset, info.Error)
		}
	}
	if got := s.consume(t, topic, 0, 3); got[0].offset != 2 {
		t.Errorf("first record after DeleteRecords at offset %d, want 2", got[0].offset)
	}

	group := uniqueName("ckg-adm")
	ag, err := s.admin.AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{
		Group:      group,
		Partitions: []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 4}, {Topic: &topic, Partition: 2, Offset: 0}},
	}})
	if err != nil || len(ag.ConsumerGroupsTopicPartitions) != 1 {
		t.Fatalf("AlterConsumerGroupOffsets: %+v %v", ag, err)
	}
	for _, tp := range ag.ConsumerGroupsTopicPartitions[0].Partitions {
		if tp.Error != nil {
			t.Errorf("AlterConsumerGroupOffsets %v: %v", tp, tp.Error)
		}
	}
	lc, err := s.admin.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group}})
	if err != nil || len(lc.ConsumerGroupsTopicPartitions) != 1 {
		t.Fatalf("ListConsumerGroupOffsets: %+v %v", lc, err)
	}
	var got []string
	for _, tp := range lc.ConsumerGroupsTopicPartitions[0].Partitions {
		got = append(got, fmt.Sprintf("%d@%d", tp.Partition, tp.Offset))
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[0@4 2@0]" {
		t.Errorf("group offsets %v, want [0@4 2@0]", got)
	}
	dg, err := s.admin.DeleteConsumerGroups(ctx, []string{group})
	if err != nil || len(dg.ConsumerGroupResults) != 1 || dg.ConsumerGroupResults[0].Error.Code() != kafka.ErrNoError {
		t.Errorf("DeleteConsumerGroups: %+v %v", dg, err)
	}
	dg, err = s.admin.DeleteConsumerGroups(ctx, []string{group})
	if err != nil || len(dg.ConsumerGroupResults) != 1 || dg.ConsumerGroupResults[0].Error.Code() != kafka.ErrGroupIDNotFound {
		t.Errorf("second DeleteConsumerGroups: %+v %v, want %v", dg, err, kafka.ErrGroupIDNotFound)
	}

	dt, err := s.admin.DeleteTopics(ctx, []string{topic})
	if err != nil || len(dt) != 1 || dt[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("DeleteTopics: %v %v", dt, err)
	}
	dt, err = s.admin.DeleteTopics(ctx, []string{topic})
	if err != nil || len(dt) != 1 || dt[0].Error.Code() != kafka.ErrUnknownTopicOrPart {
		t.Errorf("second DeleteTopics: %v %v, want %v", dt, err, kafka.ErrUnknownTopicOrPart)
	}
}
