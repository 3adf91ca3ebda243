package goclients

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// kafka-go scenarios beyond the basics: two readers in one group, topic
// auto-creation, headers and timestamps, offsets by time, and the rest of
// kafka.Client.

// twoReaders: two group readers over four partitions read every record
// once between them.
func (s *kafkaGoSuite) twoReaders(t *testing.T) {
	topic := uniqueName("kgo-2r")
	group := uniqueName("kgo-2r")
	s.createTopic(t, topic, 4)

	var mu sync.Mutex
	perReader := map[int][]record{}
	ctx := ctxTimeout(t, 30*time.Second)
	var wg sync.WaitGroup
	readers := make([]*kafka.Reader, 2)
	for i := range readers {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:           []string{s.tb.addr},
			GroupID:           group,
			Topic:             topic,
			StartOffset:       kafka.FirstOffset,
			MaxWait:           100 * time.Millisecond,
			HeartbeatInterval: 200 * time.Millisecond,
			SessionTimeout:    6 * time.Second,
			RebalanceTimeout:  3 * time.Second,
			JoinGroupBackoff:  100 * time.Millisecond,
			CommitInterval:    0,
			MaxAttempts:       3,
		})
		readers[i] = r
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					return // closed or deadline
				}
				if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
					t.Errorf("reader %d CommitMessages: %v", i, err)
				}
				mu.Lock()
				perReader[i] = append(perReader[i], record{partition: int32(m.Partition), offset: m.Offset})
				mu.Unlock()
			}
		}(i)
	}
	defer func() {
		for _, r := range readers {
			_ = r.Close()
		}
		wg.Wait()
	}()

	// Both members must be in the group before anything is written, or the
	// first could read it all.
	waitFor(t, 20*time.Second, "two members in the group", func() error {
		dg, err := s.client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err != nil {
			return err
		}
		if len(dg.Groups) != 1 || dg.Groups[0].GroupState != "Stable" || len(dg.Groups[0].Members) != 2 {
			return fmt.Errorf("group: %+v", dg.Groups)
		}
		owned := 0
		for _, m := range dg.Groups[0].Members {
			for _, tp := range m.MemberAssignments.Topics {
				owned += len(tp.Partitions)
			}
		}
		if owned != 4 {
			return fmt.Errorf("%d partitions assigned, want 4", owned)
		}
		return nil
	})

	w := s.writer(0)
	w.Topic = topic
	w.Balancer = &kafka.RoundRobin{}
	defer w.Close()
	const n = 40
	var msgs []kafka.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprint(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	waitFor(t, 15*time.Second, "readers read every record", func() error {
		mu.Lock()
		defer mu.Unlock()
		seen := map[string]bool{}
		total := 0
		for _, rs := range perReader {
			for _, r := range rs {
				seen[fmt.Sprintf("%d/%d", r.partition, r.offset)] = true
				total++
			}
		}
		if total != n || len(seen) != n {
			return fmt.Errorf("%d records read (%d distinct), want %d", total, len(seen), n)
		}
		if len(perReader[0]) == 0 || len(perReader[1]) == 0 {
			return fmt.Errorf("one reader read nothing: %d / %d", len(perReader[0]), len(perReader[1]))
		}
		return nil
	})
}

// autoCreateHeaders: a Writer that may create topics writes to a new one;
// headers and CreateTime come back; a reader seeks by time.
func (s *kafkaGoSuite) autoCreateHeaders(t *testing.T) {
	topic := uniqueName("kgo-auto")
	w := s.writer(kafka.Snappy)
	w.Topic = topic
	w.AllowAutoTopicCreation = true
	defer w.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var msgs []kafka.Message
	for i := 0; i < 4; i++ {
		msgs = append(msgs, kafka.Message{
			Key:     []byte(fmt.Sprint(i)),
			Value:   []byte(fmt.Sprintf("v%d", i)),
			Time:    base.Add(time.Duration(i) * time.Minute),
			Headers: []kafka.Header{{Key: "n", Value: []byte(fmt.Sprint(i))}},
		})
	}
	// The first write may race the topic's creation: kafka-go retries
	// UNKNOWN_TOPIC_OR_PARTITION itself, and so does this loop.
	waitFor(t, 15*time.Second, "write to an auto-created topic", func() error {
		return w.WriteMessages(ctxTimeout(t, 10*time.Second), msgs...)
	})

	md, err := s.client.Metadata(ctxTimeout(t, 10*time.Second), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
		t.Fatalf("Metadata of the auto-created topic: %+v %v", md, err)
	}
	parts := md.Topics[0].Partitions
	if len(parts) != 1 {
		t.Fatalf("auto-created topic has %d partitions, want num.partitions=1", len(parts))
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{s.tb.addr}, Topic: topic, MaxWait: 100 * time.Millisecond, MaxAttempts: 3})
	defer r.Close()
	ctx := ctxTimeout(t, 15*time.Second)
	if err := r.SetOffsetAt(ctx, base.Add(90*time.Second)); err != nil {
		t.Fatalf("SetOffsetAt: %v", err)
	}
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatalf("ReadMessage after SetOffsetAt: %v", err)
	}
	if m.Offset != 2 || string(m.Value) != "v2" || !m.Time.Equal(base.Add(2*time.Minute)) {
		t.Errorf("first record at or after base+90s: offset %d %q %v, want offset 2 at %v", m.Offset, m.Value, m.Time, base.Add(2*time.Minute))
	}
	if len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != "2" {
		t.Errorf("headers %+v, want n=2", m.Headers)
	}
}

// clientAdmin: the rest of kafka.Client against one topic and group.
func (s *kafkaGoSuite) clientAdmin(t *testing.T) {
	topic := uniqueName("kgo-adm")
	s.createTopic(t, topic, 1)
	w := s.writer(0)
	w.Topic = topic
	defer w.Close()
	ctx := ctxTimeout(t, 20*time.Second)
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("a")}, kafka.Message{Value: []byte("b")}, kafka.Message{Value: []byte("c")}); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}

	cp, err := s.client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 2}}})
	if err != nil || cp.Errors[topic] != nil {
		t.Fatalf("CreatePartitions: %+v %v", cp, err)
	}
	lo, err := s.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		topic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0), kafka.FirstOffsetOf(1), kafka.LastOffsetOf(1)},
	}})
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	var offs []string
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			t.Errorf("ListOffsets partition %d: %v", po.Partition, po.Error)
		}
		offs = append(offs, fmt.Sprintf("%d:%d-%d", po.Partition, po.FirstOffset, po.LastOffset))
	}
	sort.Strings(offs)
	if fmt.Sprint(offs) != "[0:0-3 1:0-0]" {
		t.Errorf("ListOffsets: %v, want [0:0-3 1:0-0]", offs)
	}

	group := uniqueName("kgo-adm")
	oc, err := s.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID: group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{topic: {{Partition: 0, Offset: 2, Metadata: "m"}}},
	})
	if err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	for _, ps := range oc.Topics {
		for _, p := range ps {
			if p.Error != nil {
				t.Errorf("OffsetCommit partition %d: %v", p.Partition, p.Error)
			}
		}
	}
	of, err := s.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1}}})
	if err != nil || of.Error != nil {
		t.Fatalf("OffsetFetch: %+v %v", of, err)
	}
	got := map[int]string{}
	for _, p := range of.Topics[topic] {
		got[p.Partition] = fmt.Sprintf("%d/%s", p.CommittedOffset, p.Metadata)
	}
	if got[0] != "2/m" || got[1] != "-1/" {
		t.Errorf("OffsetFetch: %v, want 0 at 2/m and 1 at -1", got)
	}
	lg, err := s.client.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil || lg.Error != nil {
		t.Fatalf("ListGroups: %+v %v", lg, err)
	}
	listed := false
	for _, g := range lg.Groups {
		listed = listed || g.GroupID == group
	}
	if !listed {
		t.Errorf("ListGroups lacks %s: %+v", group, lg.Groups)
	}
	dg, err := s.client.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil || dg.Errors[group] != nil {
		t.Errorf("DeleteGroups: %+v %v", dg, err)
	}

	dt, err := s.client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || dt.Errors[topic] != nil {
		t.Fatalf("DeleteTopics: %+v %v", dt, err)
	}
	dt, err = s.client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || !errors.Is(dt.Errors[topic], kafka.UnknownTopicOrPartition) {
		t.Errorf("second DeleteTopics: %+v %v, want %v", dt, err, kafka.UnknownTopicOrPartition)
	}
}
