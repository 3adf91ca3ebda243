package goclients

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// transactions: sarama's own implementation of the transactional producer
// (InitProducerId with a transactional id, AddPartitionsToTxn, EndTxn) and
// of read_committed (the aborted-transactions list of Fetch).
func (s *saramaSuite) transactions(t *testing.T) {
	topic := uniqueName("sarama-txn")
	s.createTopic(t, s.admin(t), topic, 1, nil)
	p := s.syncProducer(t, func(cfg *sarama.Config) {
		cfg.Producer.Idempotent = true
		cfg.Producer.Transaction.ID = uniqueName("sarama-txn-id")
		cfg.Net.MaxOpenRequests = 1
	})
	send := func(values ...string) {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		for _, v := range values {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("SendMessage %s: %v", v, err)
			}
		}
	}
	send("c1", "c2")
	if err := p.CommitTxn(); err != nil {
		t.Fatalf("CommitTxn: %v", err)
	}
	send("a1")
	if err := p.AbortTxn(); err != nil {
		t.Fatalf("AbortTxn: %v", err)
	}
	send("c3")
	if err := p.CommitTxn(); err != nil {
		t.Fatalf("CommitTxn: %v", err)
	}

	read := func(level sarama.IsolationLevel, n int) string {
		t.Helper()
		cfg := s.config()
		cfg.Consumer.IsolationLevel = level
		c, err := sarama.NewConsumer([]string{s.tb.addr}, cfg)
		if err != nil {
			t.Fatalf("sarama consumer: %v", err)
		}
		defer c.Close()
		pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition: %v", err)
		}
		defer pc.Close()
		var got []string
		timeout := timeAfter(15)
		for len(got) < n {
			select {
			case m := <-pc.Messages():
				got = append(got, string(m.Value))
			case err := <-pc.Errors():
				t.Fatalf("consume: %v", err)
			case <-timeout:
				t.Fatalf("read %q before the deadline, want %d records", got, n)
			}
		}
		return strings.Join(got, ",")
	}
	if got := read(sarama.ReadCommitted, 3); got != "c1,c2,c3" {
		t.Errorf("read_committed read %s, want c1,c2,c3", got)
	}
	if got := read(sarama.ReadUncommitted, 4); got != "c1,c2,a1,c3" {
		t.Errorf("read_uncommitted read %s, want c1,c2,a1,c3", got)
	}
}

func timeAfter(seconds int) <-chan time.Time { return time.After(time.Duration(seconds) * time.Second) }
