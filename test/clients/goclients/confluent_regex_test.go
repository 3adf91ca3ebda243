//go:build cgo

package goclients

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// regexConsumer (KIP-848): a librdkafka consumer with group.protocol=consumer and a
// regex subscription ("^prefix.*"): the broker resolves the regex and assigns the
// matching topics, including one created after the consumer joined.
func (s *confluentSuite) regexConsumer(t *testing.T) {
	prefix := uniqueName("ckg-rx")
	a, b, other := prefix+"-a", prefix+"-b", uniqueName("ckg-norx")
	for _, topic := range []string{a, other} {
		s.createTopic(t, topic, 1, nil)
	}
	p := s.newProducer(t, nil)
	send := func(topic string, n int) {
		var msgs []*kafka.Message
		for i := 0; i < n; i++ {
			msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(fmt.Sprint(i))})
		}
		produce(t, p, msgs)
	}
	send(a, 3)
	send(other, 3)

	c, err := kafka.NewConsumer(s.config(kafka.ConfigMap{
		"group.id":                           uniqueName("ckg-rx"),
		"group.protocol":                     "consumer",
		"auto.offset.reset":                  "earliest",
		"enable.auto.commit":                 false,
		"fetch.wait.max.ms":                  100,
		"topic.metadata.refresh.interval.ms": 500,
	}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	if err := c.Subscribe("^"+prefix+"-.*", nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	got := map[string]int{}
	read := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; read %v", what, got)
			}
			m, err := c.ReadMessage(100 * time.Millisecond)
			if err == nil {
				got[*m.TopicPartition.Topic]++
			}
		}
	}
	read("the records of the matching topic", func() bool { return got[a] == 3 })
	s.createTopic(t, b, 1, nil)
	send(b, 2)
	read("the records of a matching topic created later", func() bool { return got[b] == 2 })
	if got[other] != 0 {
		t.Errorf("read %d records of a topic the regex does not match", got[other])
	}
}
