package goclients

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSarama drives Sluice with IBM/sarama at three protocol levels: Kafka
// 2.1's requests (the oldest clients Kafka 4 still serves), sarama's default
// (2.8) and Kafka 4.0's. Features sarama gates on a newer version are left
// out at older ones.
func TestSarama(t *testing.T) {
	t.Parallel()
	for _, v := range []sarama.KafkaVersion{sarama.V2_1_0_0, sarama.DefaultVersion, sarama.V4_0_0_0} {
		t.Run("kafka-"+v.String(), func(t *testing.T) {
			t.Parallel()
			tb := startBroker(t)
			s := &saramaSuite{tb: tb, version: v}
			t.Run("admin-configs", s.adminConfigs)
			t.Run("keyed-compacted", s.keyedCompacted)
			t.Run("compaction", s.compaction)
			t.Run("compression", s.compression)
			t.Run("idempotent", s.idempotent)
			t.Run("consumer-group-resume", s.consumerGroupResume)
			t.Run("two-members", s.twoMembers)
			t.Run("static-member", s.staticMember)
			t.Run("headers-timestamps", s.headersTimestamps)
			t.Run("admin-more", s.adminMore)
			t.Run("transactions", s.transactions)
		})
	}
}

type saramaSuite struct {
	tb      *testBroker
	version sarama.KafkaVersion
}

func (s *saramaSuite) config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = s.version
	cfg.ClientID = "sluice-sarama-test"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Short long-polls: closing a consumer waits for the fetch in flight.
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	return cfg
}

func (s *saramaSuite) admin(t *testing.T) sarama.ClusterAdmin {
	t.Helper()
	adm, err := sarama.NewClusterAdmin([]string{s.tb.addr}, s.config())
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	return adm
}

func (s *saramaSuite) createTopic(t *testing.T, adm sarama.ClusterAdmin, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	err := adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false)
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", name, err)
	}
}

func (s *saramaSuite) syncProducer(t *testing.T, mutate func(*sarama.Config)) sarama.SyncProducer {
	t.Helper()
	cfg := s.config()
	if mutate != nil {
		mutate(cfg)
	}
	p, err := sarama.NewSyncProducer([]string{s.tb.addr}, cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// consume reads n records of one partition from the first offset.
func (s *saramaSuite) consume(t *testing.T, topic string, partition int32, n int) []record {
	t.Helper()
	return s.consumeUntil(t, topic, partition, func(got []record) bool { return len(got) >= n })
}

// consumeUntil reads one partition from the first offset until done says
// so.
func (s *saramaSuite) consumeUntil(t *testing.T, topic string, partition int32, done func([]record) bool) []record {
	t.Helper()
	c, err := sarama.NewConsumer([]string{s.tb.addr}, s.config())
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition %s/%d: %v", topic, partition, err)
	}
	defer pc.Close()
	var out []record
	timeout := time.After(15 * time.Second)
	for !done(out) {
		select {
		case m := <-pc.Messages():
			out = append(out, record{partition: m.Partition, offset: m.Offset, key: string(m.Key), value: m.Value})
		case err := <-pc.Errors():
			t.Fatalf("consume %s/%d: %v", topic, partition, err)
		case <-timeout:
			t.Fatalf("consume %s/%d: deadline passed after %d records: %s", topic, partition, len(out), formatRecords(out))
		}
	}
	return out
}

func configValue(entries []sarama.ConfigEntry, name string) (sarama.ConfigEntry, bool) {
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return sarama.ConfigEntry{}, false
}

func (s *saramaSuite) adminConfigs(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-cfg")
	compact := "compact"
	s.createTopic(t, adm, topic, 3, map[string]*string{"cleanup.policy": &compact})

	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 {
		t.Fatalf("DescribeTopics: %v %v", md, err)
	}
	if !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) != 3 {
		t.Fatalf("DescribeTopics %s: err %v, %d partitions, want 3", topic, md[0].Err, len(md[0].Partitions))
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("second CreateTopic: got %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}

	res := sarama.ConfigResource{Type: sarama.TopicResource, Name: topic}
	entries, err := adm.DescribeConfig(res)
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	if e, ok := configValue(entries, "cleanup.policy"); !ok || e.Value != "compact" || e.Default {
		t.Errorf("cleanup.policy = %+v (found %v), want compact, not default", e, ok)
	}
	if e, ok := configValue(entries, "retention.ms"); !ok || !e.Default {
		t.Errorf("retention.ms = %+v (found %v), want a default entry", e, ok)
	}

	// AlterConfigs (non-incremental) replaces the whole override set:
	// cleanup.policy falls back to its default.
	retention := "3600000"
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &retention}, false); err != nil {
		t.Fatalf("AlterConfig: %v", err)
	}
	entries, err = adm.DescribeConfig(res)
	if err != nil {
		t.Fatalf("DescribeConfig after AlterConfig: %v", err)
	}
	if e, _ := configValue(entries, "retention.ms"); e.Value != retention || e.Default {
		t.Errorf("after AlterConfig retention.ms = %+v, want %s", e, retention)
	}
	if e, _ := configValue(entries, "cleanup.policy"); e.Value != "delete" || !e.Default {
		t.Errorf("after AlterConfig cleanup.policy = %+v, want the default delete", e)
	}

	// IncrementalAlterConfigs keeps what it does not name.
	if !s.version.IsAtLeast(sarama.V2_3_0_0) {
		t.Logf("sarama sends IncrementalAlterConfigs from Kafka 2.3 on; not at %s", s.version)
		return
	}
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &compact},
	}, false); err != nil {
		t.Fatalf("IncrementalAlterConfig: %v", err)
	}
	entries, err = adm.DescribeConfig(res)
	if err != nil {
		t.Fatalf("DescribeConfig after IncrementalAlterConfig: %v", err)
	}
	if e, _ := configValue(entries, "cleanup.policy"); e.Value != "compact" {
		t.Errorf("after IncrementalAlterConfig cleanup.policy = %+v, want compact", e)
	}
	if e, _ := configValue(entries, "retention.ms"); e.Value != retention {
		t.Errorf("after IncrementalAlterConfig retention.ms = %+v, want %s kept", e, retention)
	}

	bad := "not-a-policy"
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"cleanup.policy": &bad}, false); err == nil {
		t.Errorf("AlterConfig cleanup.policy=%s: no error", bad)
	} else if !errors.Is(err, sarama.ErrInvalidConfig) {
		t.Errorf("AlterConfig cleanup.policy=%s: %v, want %v", bad, err, sarama.ErrInvalidConfig)
	}

	// The broker resource describes too.
	bentries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1"})
	if err != nil {
		t.Fatalf("DescribeConfig broker: %v", err)
	}
	if _, ok := configValue(bentries, "log.cleaner.enable"); !ok {
		t.Errorf("broker configs lack log.cleaner.enable (%d entries)", len(bentries))
	}
}

func (s *saramaSuite) keyedCompacted(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-compact")
	compact := "compact"
	s.createTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": &compact})
	p := s.syncProducer(t, nil)
	for i, r := range keyedRecords() {
		msg := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(r.key)}
		if r.value != nil {
			msg.Value = sarama.ByteEncoder(r.value)
		}
		part, off, err := p.SendMessage(msg)
		if err != nil {
			t.Fatalf("SendMessage %d: %v", i, err)
		}
		if part != 0 || off != int64(i) {
			t.Errorf("SendMessage %d: partition %d offset %d, want 0/%d", i, part, off, i)
		}
	}
	checkKeyed(t, s.consume(t, topic, 0, len(keyedRecords())))
}

func (s *saramaSuite) compaction(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-cleaned")
	configs := map[string]*string{}
	for k, v := range compactingTopicConfigs {
		configs[k] = &v
	}
	s.createTopic(t, adm, topic, 1, configs)
	p := s.syncProducer(t, nil)
	for i, r := range compactionRecords() {
		msg := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(r.key)}
		if r.value != nil {
			msg.Value = sarama.ByteEncoder(r.value)
		}
		if _, _, err := p.SendMessage(msg); err != nil {
			t.Fatalf("SendMessage %d: %v", i, err)
		}
	}
	waitCompacted(t, func() []record {
		return s.consumeUntil(t, topic, 0, func(got []record) bool { return len(got) > 0 && got[len(got)-1].key == "end" })
	})
}

func (s *saramaSuite) compression(t *testing.T) {
	adm := s.admin(t)
	codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			topic := uniqueName("sarama-" + codec.String())
			s.createTopic(t, adm, topic, 1, nil)
			p := s.syncProducer(t, func(c *sarama.Config) { c.Producer.Compression = codec })
			const n = 20
			var msgs []*sarama.ProducerMessage
			for i := 0; i < n; i++ {
				msgs = append(msgs, &sarama.ProducerMessage{
					Topic: topic,
					Key:   sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
					Value: sarama.StringEncoder(fmt.Sprintf("%s value %d, repeated repeated repeated repeated", codec, i)),
				})
			}
			if err := p.SendMessages(msgs); err != nil {
				t.Fatalf("SendMessages: %v", err)
			}
			got := s.consume(t, topic, 0, n)
			for i, r := range got {
				want := fmt.Sprintf("%s value %d, repeated repeated repeated repeated", codec, i)
				if r.offset != int64(i) || r.key != fmt.Sprintf("key-%d", i) || string(r.value) != want {
					t.Errorf("record %d: %+v, want offset %d value %q", i, r, i, want)
				}
			}
		})
	}
}

func (s *saramaSuite) idempotent(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-idem")
	s.createTopic(t, adm, topic, 2, nil)
	p := s.syncProducer(t, func(c *sarama.Config) {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
		c.Producer.Retry.Max = 5
	})
	const n = 30
	perPartition := map[int32][]int64{}
	for i := 0; i < n; i++ {
		part, off, err := p.SendMessage(&sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.StringEncoder(fmt.Sprintf("k%d", i%5)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)),
		})
		if err != nil {
			t.Fatalf("idempotent SendMessage %d: %v", i, err)
		}
		perPartition[part] = append(perPartition[part], off)
	}
	total := 0
	for part, offs := range perPartition {
		for i, off := range offs {
			if off != int64(i) {
				t.Errorf("partition %d: record %d at offset %d, want dense offsets", part, i, off)
			}
		}
		got := s.consume(t, topic, part, len(offs))
		total += len(got)
	}
	if total != n {
		t.Errorf("consumed %d records, want %d", total, n)
	}
}

// saramaGroupHandler commits each record it is handed and forwards it.
type saramaGroupHandler struct {
	out chan<- record
}

func (saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaGroupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			sess.MarkMessage(m, "")
			sess.Commit()
			select {
			case h.out <- record{partition: m.Partition, offset: m.Offset, key: string(m.Key), value: m.Value}:
			case <-sess.Context().Done():
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

// groupRun joins group, reads n records, commits them, and leaves.
func (s *saramaSuite) groupRun(t *testing.T, group, topic string, n int) []record {
	t.Helper()
	cfg := s.config()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cg, err := sarama.NewConsumerGroup([]string{s.tb.addr}, group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan record, 64)
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, saramaGroupHandler{out: out}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var got []record
	timeout := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case r := <-out:
			got = append(got, r)
		case err := <-cg.Errors():
			t.Errorf("consumer group error: %v", err)
		case err := <-done:
			cancel()
			t.Fatalf("consumer group stopped after %d of %d records: %v", len(got), n, err)
		case <-timeout:
			cancel()
			_ = cg.Close()
			t.Fatalf("consumer group: got %d of %d records before the deadline", len(got), n)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Consume: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Errorf("consumer group close: %v", err)
	}
	return got
}

func (s *saramaSuite) consumerGroupResume(t *testing.T) {
	adm := s.admin(t)
	topic := uniqueName("sarama-group")
	group := uniqueName("sarama-group")
	s.createTopic(t, adm, topic, 1, nil)
	p := s.syncProducer(t, nil)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}); err != nil {
				t.Fatalf("SendMessage %d: %v", i, err)
			}
		}
	}
	send(0, 5)
	first := s.groupRun(t, group, topic, 5)
	for i, r := range first {
		if r.offset != int64(i) {
			t.Errorf("first run record %d at offset %d", i, r.offset)
		}
	}
	offs, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0}})
	if err != nil {
		t.Fatalf("ListConsumerGroupOffsets: %v", err)
	}
	if b := offs.GetBlock(topic, 0); b == nil || b.Offset != 5 {
		t.Errorf("committed offset after first run: %+v, want 5", b)
	}

	send(5, 8)
	second := s.groupRun(t, group, topic, 3)
	for i, r := range second {
		if r.offset != int64(5+i) || r.key != fmt.Sprintf("k%d", 5+i) {
			t.Errorf("resumed record %d: %+v, want offset %d", i, r, 5+i)
		}
	}

	groups, err := adm.ListConsumerGroups()
	if err != nil {
		t.Fatalf("ListConsumerGroups: %v", err)
	}
	if _, ok := groups[group]; !ok {
		t.Errorf("ListConsumerGroups lacks %s: %v", group, groups)
	}
	desc, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(desc) != 1 {
		t.Fatalf("DescribeConsumerGroups: %v %v", desc, err)
	}
	if desc[0].State != "Empty" {
		t.Errorf("group state after both consumers left: %q, want Empty", desc[0].State)
	}
}
