package goclients

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
)

// Broker restarts under live clients: an idempotent producer keeps going
// without a fatal sequence error or a duplicate, and a consumer group
// resumes at the offsets it committed before the restart.

func TestSaramaBrokerRestart(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &saramaSuite{tb: tb, version: sarama.V4_0_0_0}
	adm := s.admin(t)
	topic := uniqueName("sarama-restart")
	group := uniqueName("sarama-restart")
	s.createTopic(t, adm, topic, 1, nil)
	p := s.syncProducer(t, func(c *sarama.Config) {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
		c.Producer.Retry.Max = 20
		c.Producer.Retry.Backoff = 100 * time.Millisecond
		c.Metadata.Retry.Max = 20
	})
	send := func(from, to int) {
		for i := from; i < to; i++ {
			_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprint(i))})
			if err != nil {
				t.Fatalf("SendMessage %d: %v", i, err)
			}
			if off != int64(i) {
				t.Errorf("record %d at offset %d", i, off)
			}
		}
	}
	send(0, 5)
	if got := len(s.groupRun(t, group, topic, 5)); got != 5 {
		t.Fatalf("first group run read %d", got)
	}

	tb.restart(t)

	send(5, 10)
	second := s.groupRun(t, group, topic, 5)
	for i, r := range second {
		if r.offset != int64(5+i) || string(r.value) != fmt.Sprint(5+i) {
			t.Errorf("after restart record %d: %+v, want offset %d", i, r, 5+i)
		}
	}
}

func TestKafkaGoBrokerRestart(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &kafkaGoSuite{tb: tb, client: &kafkago.Client{Addr: kafkago.TCP(tb.addr), Timeout: 10 * time.Second}}
	topic := uniqueName("kgo-restart")
	group := uniqueName("kgo-restart")
	s.createTopic(t, topic, 1, kafkago.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
	w := s.writer(kafkago.Lz4)
	w.Topic = topic
	w.MaxAttempts = 10
	w.WriteBackoffMin = 50 * time.Millisecond
	defer w.Close()
	send := func(from, to int) {
		var msgs []kafkago.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, kafkago.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprint(i))})
		}
		if err := w.WriteMessages(ctxTimeout(t, 15*time.Second), msgs...); err != nil {
			t.Fatalf("WriteMessages: %v", err)
		}
	}
	send(0, 4)
	if got := len(s.groupRead(t, group, topic, 4)); got != 4 {
		t.Fatalf("first run read %d", got)
	}

	tb.restart(t)

	send(4, 7)
	for i, r := range s.groupRead(t, group, topic, 3) {
		if r.offset != int64(4+i) || string(r.value) != fmt.Sprint(4+i) {
			t.Errorf("after restart record %d: %+v, want offset %d", i, r, 4+i)
		}
	}
	cfg := s.describeTopic(t, topic)
	if e := cfg["cleanup.policy"]; e.ConfigValue != "compact" {
		t.Errorf("cleanup.policy after restart: %+v, want compact", e)
	}
}
