//go:build cgo

package goclients

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// librdkafka's side of edges_test.go.

func TestConfluentEdges(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &confluentSuite{tb: tb}
	s.admin = s.newAdmin(t)

	t.Run("acks-0", func(t *testing.T) {
		topic := uniqueName("ckg-acks0")
		s.createTopic(t, topic, 1, nil)
		p := s.newProducer(t, kafka.ConfigMap{"acks": 0})
		var msgs []*kafka.Message
		for i := 0; i < 5; i++ {
			msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("x")})
		}
		produce(t, p, msgs)
		if got := s.consume(t, topic, 0, 5); len(got) != 5 {
			t.Errorf("read %d records", len(got))
		}
	})

	t.Run("record-larger-than-fetch", func(t *testing.T) {
		topic := uniqueName("ckg-big")
		s.createTopic(t, topic, 1, nil)
		p := s.newProducer(t, kafka.ConfigMap{"compression.type": "none"})
		big := bigValue(600 << 10)
		produce(t, p, []*kafka.Message{{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: big}})
		c, err := kafka.NewConsumer(s.config(kafka.ConfigMap{
			"group.id":                  uniqueName("ckg-big"),
			"enable.auto.commit":        false,
			"fetch.wait.max.ms":         100,
			"max.partition.fetch.bytes": 64 << 10,
			"fetch.max.bytes":           64 << 10,
			"message.max.bytes":         64 << 10, // librdkafka wants fetch.max.bytes >= it
			"receive.message.max.bytes": 1 << 20,
		}))
		if err != nil {
			t.Fatalf("NewConsumer: %v", err)
		}
		defer c.Close()
		if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		m := readMessages(t, c, 1, 10*time.Second)[0]
		if !bytes.Equal(m.Value, big) {
			t.Errorf("big record: %d bytes back, want %d identical", len(m.Value), len(big))
		}
	})

	t.Run("record-too-large", func(t *testing.T) {
		topic := uniqueName("ckg-toolarge")
		s.createTopic(t, topic, 1, map[string]string{"max.message.bytes": "10000"})
		p := s.newProducer(t, kafka.ConfigMap{"compression.type": "none", "message.send.max.retries": 0})
		dr := make(chan kafka.Event, 1)
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: bigValue(20000)}, dr); err != nil {
			t.Fatalf("Produce: %v", err)
		}
		select {
		case ev := <-dr:
			m := ev.(*kafka.Message)
			var kerr kafka.Error
			if !errors.As(m.TopicPartition.Error, &kerr) || kerr.Code() != kafka.ErrMsgSizeTooLarge {
				t.Errorf("20 kB record into max.message.bytes=10000: %v, want %v", m.TopicPartition.Error, kafka.ErrMsgSizeTooLarge)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no delivery report for the oversized record")
		}
		if tps := produce(t, p, []*kafka.Message{{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("small")}}); tps[0].Offset != 0 {
			t.Errorf("small record after the refused one at offset %d, want 0", tps[0].Offset)
		}
	})

	// librdkafka's transactional producer: a committed and an aborted
	// transaction, read back with isolation.level read_committed (only the
	// committed records, and the consumer reaches the end past the abort
	// marker) and read_uncommitted (everything).
	t.Run("transactions", func(t *testing.T) {
		topic := uniqueName("ckg-txn")
		s.createTopic(t, topic, 1, nil)
		p := s.newProducer(t, kafka.ConfigMap{"transactional.id": uniqueName("ckg-txn-id")})
		if err := p.InitTransactions(ctxTimeout(t, 30*time.Second)); err != nil {
			t.Fatalf("InitTransactions: %v", err)
		}
		send := func(values ...string) {
			if err := p.BeginTransaction(); err != nil {
				t.Fatalf("BeginTransaction: %v", err)
			}
			var msgs []*kafka.Message
			for _, v := range values {
				msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(v)})
			}
			produce(t, p, msgs)
		}
		send("c1", "c2")
		if err := p.CommitTransaction(ctxTimeout(t, 30*time.Second)); err != nil {
			t.Fatalf("CommitTransaction: %v", err)
		}
		send("a1")
		if err := p.AbortTransaction(ctxTimeout(t, 30*time.Second)); err != nil {
			t.Fatalf("AbortTransaction: %v", err)
		}
		send("c3")
		if err := p.CommitTransaction(ctxTimeout(t, 30*time.Second)); err != nil {
			t.Fatalf("CommitTransaction: %v", err)
		}
		read := func(isolation string, n int) []string {
			c, err := kafka.NewConsumer(s.config(kafka.ConfigMap{"group.id": uniqueName("ckg-txn-reader"),
				"isolation.level": isolation, "enable.auto.commit": false}))
			if err != nil {
				t.Fatalf("NewConsumer: %v", err)
			}
			defer c.Close()
			if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
				t.Fatalf("Assign: %v", err)
			}
			var got []string
			deadline := time.Now().Add(15 * time.Second)
			for len(got) < n && time.Now().Before(deadline) {
				m, err := c.ReadMessage(200 * time.Millisecond)
				if err == nil {
					got = append(got, string(m.Value))
				}
			}
			return got
		}
		if got := read("read_committed", 3); strings.Join(got, ",") != "c1,c2,c3" {
			t.Errorf("read_committed read %q, want c1,c2,c3", got)
		}
		if got := read("read_uncommitted", 4); strings.Join(got, ",") != "c1,c2,a1,c3" {
			t.Errorf("read_uncommitted read %q, want c1,c2,a1,c3", got)
		}
	})

	t.Run("offset-out-of-range-resets", func(t *testing.T) {
		topic := uniqueName("ckg-oor")
		group := uniqueName("ckg-oor")
		s.createTopic(t, topic, 1, nil)
		p := s.newProducer(t, nil)
		produce(t, p, []*kafka.Message{
			{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("0")},
			{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("1")},
		})
		// A committed offset past the end: the consumer must hit
		// OFFSET_OUT_OF_RANGE and fall back to auto.offset.reset=earliest.
		ag, err := s.admin.AlterConsumerGroupOffsets(ctxTimeout(t, 10*time.Second), []kafka.ConsumerGroupTopicPartitions{{
			Group: group, Partitions: []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 50}},
		}})
		if err != nil || ag.ConsumerGroupsTopicPartitions[0].Partitions[0].Error != nil {
			t.Fatalf("AlterConsumerGroupOffsets: %+v %v", ag, err)
		}
		got := s.groupRead(t, "classic", group, topic, 2)
		if got[0].offset != 0 || got[1].offset != 1 {
			t.Errorf("after an out-of-range commit read %s, want offsets 0 and 1", formatRecords(got))
		}
	})
}
