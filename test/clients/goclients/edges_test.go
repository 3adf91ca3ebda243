package goclients

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
)

// Edge cases every client meets sooner or later: acks=0, a record larger
// than the consumer's fetch size (KIP-74: the broker still returns it), a
// record larger than max.message.bytes (a clean MESSAGE_TOO_LARGE), and a
// fetch from an offset past the end (OFFSET_OUT_OF_RANGE, then the reset
// policy).

func bigValue(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func TestSaramaEdges(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &saramaSuite{tb: tb, version: sarama.DefaultVersion}
	adm := s.admin(t)

	t.Run("acks-0", func(t *testing.T) {
		topic := uniqueName("sarama-acks0")
		s.createTopic(t, adm, topic, 1, nil)
		p := s.syncProducer(t, func(c *sarama.Config) { c.Producer.RequiredAcks = sarama.NoResponse })
		for i := 0; i < 5; i++ {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")}); err != nil {
				t.Fatalf("SendMessage acks=0: %v", err)
			}
		}
		// acks=0 gives no confirmation: the records must show up anyway.
		if got := s.consume(t, topic, 0, 5); len(got) != 5 {
			t.Errorf("read %d records", len(got))
		}
	})

	t.Run("record-larger-than-fetch", func(t *testing.T) {
		topic := uniqueName("sarama-big")
		s.createTopic(t, adm, topic, 1, nil)
		p := s.syncProducer(t, nil)
		big := bigValue(600 << 10)
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(big)}); err != nil {
			t.Fatalf("SendMessage 600 KiB: %v", err)
		}
		cfg := s.config()
		cfg.Consumer.Fetch.Default = 64 << 10
		cfg.Consumer.Fetch.Max = 64 << 10 // sarama must not grow it: the broker has to hand the batch over anyway
		c, err := sarama.NewConsumer([]string{s.tb.addr}, cfg)
		if err != nil {
			t.Fatalf("consumer: %v", err)
		}
		defer c.Close()
		pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition: %v", err)
		}
		defer pc.Close()
		select {
		case m := <-pc.Messages():
			if !bytes.Equal(m.Value, big) {
				t.Errorf("big record: %d bytes back, want %d identical", len(m.Value), len(big))
			}
		case err := <-pc.Errors():
			t.Fatalf("consume big record: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("big record did not arrive with a 64 KiB fetch size")
		}
	})

	t.Run("record-too-large", func(t *testing.T) {
		topic := uniqueName("sarama-toolarge")
		limit := "10000"
		s.createTopic(t, adm, topic, 1, map[string]*string{"max.message.bytes": &limit})
		p := s.syncProducer(t, func(c *sarama.Config) { c.Producer.Retry.Max = 0 })
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(bigValue(20000))})
		if !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
			t.Errorf("20 kB record into max.message.bytes=10000: %v, want %v", err, sarama.ErrMessageSizeTooLarge)
		}
		if _, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("small")}); err != nil || off != 0 {
			t.Errorf("small record after the refused one: offset %d, %v; want 0", off, err)
		}
	})

	t.Run("offset-out-of-range", func(t *testing.T) {
		topic := uniqueName("sarama-oor")
		s.createTopic(t, adm, topic, 1, nil)
		p := s.syncProducer(t, nil)
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		c, err := sarama.NewConsumer([]string{s.tb.addr}, s.config())
		if err != nil {
			t.Fatalf("consumer: %v", err)
		}
		defer c.Close()
		if _, err := c.ConsumePartition(topic, 0, 100); !errors.Is(err, sarama.ErrOffsetOutOfRange) {
			t.Errorf("ConsumePartition at 100 of 1: %v, want %v", err, sarama.ErrOffsetOutOfRange)
		}
	})
}

func TestKafkaGoEdges(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &kafkaGoSuite{tb: tb, client: &kafkago.Client{Addr: kafkago.TCP(tb.addr), Timeout: 10 * time.Second}}

	t.Run("acks-0", func(t *testing.T) {
		topic := uniqueName("kgo-acks0")
		s.createTopic(t, topic, 1)
		w := s.writer(0)
		w.Topic = topic
		w.RequiredAcks = kafkago.RequireNone
		defer w.Close()
		for i := 0; i < 5; i++ {
			if err := w.WriteMessages(ctxTimeout(t, 10*time.Second), kafkago.Message{Value: []byte("x")}); err != nil {
				t.Fatalf("WriteMessages acks=0: %v", err)
			}
		}
		if got := s.readPartition(t, topic, 0, 5); len(got) != 5 {
			t.Errorf("read %d records", len(got))
		}
	})

	t.Run("record-too-large", func(t *testing.T) {
		topic := uniqueName("kgo-toolarge")
		s.createTopic(t, topic, 1, kafkago.ConfigEntry{ConfigName: "max.message.bytes", ConfigValue: "10000"})
		w := s.writer(0)
		w.Topic = topic
		w.MaxAttempts = 1
		w.BatchBytes = 1 << 20
		defer w.Close()
		err := w.WriteMessages(ctxTimeout(t, 10*time.Second), kafkago.Message{Value: bigValue(20000)})
		var we kafkago.WriteErrors
		if errors.As(err, &we) && len(we) == 1 {
			err = we[0]
		}
		if !errors.Is(err, kafkago.MessageSizeTooLarge) {
			t.Errorf("20 kB record into max.message.bytes=10000: %v, want %v", err, kafkago.MessageSizeTooLarge)
		}
		if err := w.WriteMessages(ctxTimeout(t, 10*time.Second), kafkago.Message{Value: []byte("small")}); err != nil {
			t.Fatalf("small record after the refused one: %v", err)
		}
		if got := s.readPartition(t, topic, 0, 1); got[0].offset != 0 || string(got[0].value) != "small" {
			t.Errorf("read %s, want 0:small", formatRecords(got))
		}
	})

	t.Run("offset-out-of-range", func(t *testing.T) {
		topic := uniqueName("kgo-oor")
		s.createTopic(t, topic, 1)
		conn, err := kafkago.DialLeader(ctxTimeout(t, 10*time.Second), "tcp", s.tb.addr, topic, 0)
		if err != nil {
			t.Fatalf("DialLeader: %v", err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.WriteMessages(kafkago.Message{Value: []byte("x")}); err != nil {
			t.Fatalf("WriteMessages: %v", err)
		}
		// SeekDontCheck: no ListOffsets first; the fetch itself must fail.
		if _, err := conn.Seek(100, kafkago.SeekAbsolute|kafkago.SeekDontCheck); err != nil {
			t.Fatalf("Seek: %v", err)
		}
		b := conn.ReadBatch(1, 1<<20)
		_, err = b.ReadMessage()
		_ = b.Close()
		if !errors.Is(err, kafkago.OffsetOutOfRange) {
			t.Errorf("read at offset 100 of 1: %v, want %v", err, kafkago.OffsetOutOfRange)
		}
	})
}
