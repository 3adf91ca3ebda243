package goclients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// TestKafkaGo drives Sluice with segmentio/kafka-go: its Client (admin
// APIs), Writer, Reader (single partition and consumer group) and the
// low-level Conn. kafka-go has no idempotent producer.
func TestKafkaGo(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &kafkaGoSuite{tb: tb, client: &kafka.Client{Addr: kafka.TCP(tb.addr), Timeout: 10 * time.Second}}
	t.Run("admin-configs", s.adminConfigs)
	t.Run("keyed-compacted", s.keyedCompacted)
	t.Run("compaction", s.compaction)
	t.Run("compression", s.compression)
	t.Run("conn", s.conn)
	t.Run("consumer-group-resume", s.consumerGroupResume)
	t.Run("two-readers", s.twoReaders)
	t.Run("auto-create-headers", s.autoCreateHeaders)
	t.Run("client-admin", s.clientAdmin)
}

type kafkaGoSuite struct {
	tb     *testBroker
	client *kafka.Client
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (s *kafkaGoSuite) createTopic(t *testing.T, name string, partitions int, configs ...kafka.ConfigEntry) {
	t.Helper()
	resp, err := s.client.CreateTopics(ctxTimeout(t, 10*time.Second), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}},
	})
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", name, err)
	}
	if err := resp.Errors[name]; err != nil {
		t.Fatalf("CreateTopics %s: %v", name, err)
	}
}

func (s *kafkaGoSuite) describeTopic(t *testing.T, topic string) map[string]kafka.DescribeConfigResponseConfigEntry {
	t.Helper()
	resp, err := s.client.DescribeConfigs(ctxTimeout(t, 10*time.Second), &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic}},
	})
	if err != nil {
		t.Fatalf("DescribeConfigs %s: %v", topic, err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].Error != nil {
		t.Fatalf("DescribeConfigs %s: %+v", topic, resp.Resources)
	}
	out := map[string]kafka.DescribeConfigResponseConfigEntry{}
	for _, e := range resp.Resources[0].ConfigEntries {
		out[e.ConfigName] = e
	}
	return out
}

func (s *kafkaGoSuite) writer(codec kafka.Compression) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(s.tb.addr),
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		Compression:  codec,
		WriteTimeout: 10 * time.Second,
		ReadTimeout:  10 * time.Second,
	}
}

// readPartition reads n records of one partition from its first offset.
func (s *kafkaGoSuite) readPartition(t *testing.T, topic string, partition, n int) []record {
	t.Helper()
	return s.readUntil(t, topic, partition, func(got []record) bool { return len(got) >= n })
}

// readUntil reads one partition from its first offset until done says so.
func (s *kafkaGoSuite) readUntil(t *testing.T, topic string, partition int, done func([]record) bool) []record {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     []string{s.tb.addr},
		Topic:       topic,
		Partition:   partition,
		StartOffset: kafka.FirstOffset,
		MaxWait:     100 * time.Millisecond,
		MaxAttempts: 3,
	})
	defer r.Close()
	ctx := ctxTimeout(t, 15*time.Second)
	var out []record
	for !done(out) {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("ReadMessage %s/%d after %s: %v", topic, partition, formatRecords(out), err)
		}
		out = append(out, record{partition: int32(m.Partition), offset: m.Offset, key: string(m.Key), value: m.Value})
	}
	return out
}

// DescribeConfigs config_source values (v1+ responses have no is_default;
// kafka-go fills IsDefault only from v0).
const (
	configSourceTopic   = 1 // DYNAMIC_TOPIC_CONFIG
	configSourceDefault = 5 // DEFAULT_CONFIG
)

func (s *kafkaGoSuite) adminConfigs(t *testing.T) {
	topic := uniqueName("kgo-cfg")
	s.createTopic(t, topic, 3, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})

	resp, err := s.client.CreateTopics(ctxTimeout(t, 10*time.Second), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}},
	})
	if err != nil {
		t.Fatalf("second CreateTopics: %v", err)
	}
	if !errors.Is(resp.Errors[topic], kafka.TopicAlreadyExists) {
		t.Errorf("second CreateTopics: %v, want %v", resp.Errors[topic], kafka.TopicAlreadyExists)
	}

	md, err := s.client.Metadata(ctxTimeout(t, 10*time.Second), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("Metadata %s: %+v", topic, md.Topics)
	}

	cfg := s.describeTopic(t, topic)
	if e := cfg["cleanup.policy"]; e.ConfigValue != "compact" || e.ConfigSource != configSourceTopic {
		t.Errorf("cleanup.policy = %+v, want compact, not default", e)
	}
	if e, ok := cfg["segment.bytes"]; !ok || e.ConfigSource != configSourceDefault {
		t.Errorf("segment.bytes = %+v (found %v), want a default entry", e, ok)
	}

	// AlterConfigs replaces every override.
	ar, err := s.client.AlterConfigs(ctxTimeout(t, 10*time.Second), &kafka.AlterConfigsRequest{
		Resources: []kafka.AlterConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafka.AlterConfigRequestConfig{{Name: "retention.ms", Value: "7200000"}},
		}},
	})
	if err != nil {
		t.Fatalf("AlterConfigs: %v", err)
	}
	for res, err := range ar.Errors {
		if err != nil {
			t.Fatalf("AlterConfigs %v: %v", res, err)
		}
	}
	cfg = s.describeTopic(t, topic)
	if e := cfg["retention.ms"]; e.ConfigValue != "7200000" {
		t.Errorf("after AlterConfigs retention.ms = %+v", e)
	}
	if e := cfg["cleanup.policy"]; e.ConfigValue != "delete" || e.ConfigSource != configSourceDefault {
		t.Errorf("after AlterConfigs cleanup.policy = %+v, want the default delete", e)
	}

	ir, err := s.client.IncrementalAlterConfigs(ctxTimeout(t, 10*time.Second), &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{
				{Name: "cleanup.policy", Value: "compact", ConfigOperation: kafka.ConfigOperationSet},
				{Name: "retention.ms", ConfigOperation: kafka.ConfigOperationDelete},
			},
		}},
	})
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range ir.Resources {
		if r.Error != nil {
			t.Fatalf("IncrementalAlterConfigs %s: %v", r.ResourceName, r.Error)
		}
	}
	cfg = s.describeTopic(t, topic)
	if e := cfg["cleanup.policy"]; e.ConfigValue != "compact" {
		t.Errorf("after IncrementalAlterConfigs cleanup.policy = %+v, want compact", e)
	}
	if e := cfg["retention.ms"]; e.ConfigSource != configSourceDefault {
		t.Errorf("after IncrementalAlterConfigs delete, retention.ms = %+v, want the default", e)
	}

	ir, err = s.client.IncrementalAlterConfigs(ctxTimeout(t, 10*time.Second), &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "min.cleanable.dirty.ratio", Value: "2.5"}},
		}},
	})
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs (bad value): %v", err)
	}
	if len(ir.Resources) != 1 || !errors.Is(ir.Resources[0].Error, kafka.InvalidConfiguration) {
		t.Errorf("min.cleanable.dirty.ratio=2.5: %+v, want %v", ir.Resources, kafka.InvalidConfiguration)
	}
}

func (s *kafkaGoSuite) keyedCompacted(t *testing.T) {
	topic := uniqueName("kgo-compact")
	s.createTopic(t, topic, 1, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
	w := s.writer(0)
	w.Topic = topic
	defer w.Close()
	var msgs []kafka.Message
	for _, r := range keyedRecords() {
		msgs = append(msgs, kafka.Message{Key: []byte(r.key), Value: r.value})
	}
	if err := w.WriteMessages(ctxTimeout(t, 15*time.Second), msgs...); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	checkKeyed(t, s.readPartition(t, topic, 0, len(msgs)))
}

func (s *kafkaGoSuite) compaction(t *testing.T) {
	topic := uniqueName("kgo-cleaned")
	var configs []kafka.ConfigEntry
	for k, v := range compactingTopicConfigs {
		configs = append(configs, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	s.createTopic(t, topic, 1, configs...)
	w := s.writer(0)
	w.Topic = topic
	defer w.Close()
	for i, r := range compactionRecords() {
		// One write per record: one batch each, so the cleaner has
		// several batches to drop.
		if err := w.WriteMessages(ctxTimeout(t, 15*time.Second), kafka.Message{Key: []byte(r.key), Value: r.value}); err != nil {
			t.Fatalf("WriteMessages %d: %v", i, err)
		}
	}
	waitCompacted(t, func() []record {
		return s.readUntil(t, topic, 0, func(got []record) bool { return len(got) > 0 && got[len(got)-1].key == "end" })
	})
}

func (s *kafkaGoSuite) compression(t *testing.T) {
	codecs := []kafka.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd}
	for _, codec := range codecs {
		name := "none"
		if codec != 0 {
			name = codec.String()
		}
		t.Run(name, func(t *testing.T) {
			topic := uniqueName("kgo-" + name)
			s.createTopic(t, topic, 1)
			w := s.writer(codec)
			w.Topic = topic
			defer w.Close()
			const n = 20
			var msgs []kafka.Message
			for i := 0; i < n; i++ {
				msgs = append(msgs, kafka.Message{
					Key:   []byte(fmt.Sprintf("key-%d", i)),
					Value: []byte(fmt.Sprintf("%s value %d, repeated repeated repeated repeated", name, i)),
				})
			}
			if err := w.WriteMessages(ctxTimeout(t, 15*time.Second), msgs...); err != nil {
				t.Fatalf("WriteMessages: %v", err)
			}
			for i, r := range s.readPartition(t, topic, 0, n) {
				if r.offset != int64(i) || r.key != string(msgs[i].Key) || string(r.value) != string(msgs[i].Value) {
					t.Errorf("record %d: %+v, want offset %d value %q", i, r, i, msgs[i].Value)
				}
			}
		})
	}
}

// conn uses kafka-go's low-level connection: leader dial, produce, batch
// read, offsets.
func (s *kafkaGoSuite) conn(t *testing.T) {
	topic := uniqueName("kgo-conn")
	s.createTopic(t, topic, 1)
	ctx := ctxTimeout(t, 15*time.Second)
	conn, err := kafka.DialLeader(ctx, "tcp", s.tb.addr, topic, 0)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.WriteMessages(
		kafka.Message{Key: []byte("a"), Value: []byte("one")},
		kafka.Message{Key: []byte("b"), Value: []byte("two")},
		kafka.Message{Key: []byte("c"), Value: []byte("three")},
	); err != nil {
		t.Fatalf("Conn.WriteMessages: %v", err)
	}
	first, last, err := conn.ReadOffsets()
	if err != nil {
		t.Fatalf("ReadOffsets: %v", err)
	}
	if first != 0 || last != 3 {
		t.Errorf("ReadOffsets = %d, %d; want 0, 3", first, last)
	}
	if _, err := conn.Seek(1, kafka.SeekAbsolute); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	batch := conn.ReadBatch(1, 1<<20)
	var got []string
	for len(got) < 2 {
		m, err := batch.ReadMessage()
		if err != nil {
			t.Fatalf("batch.ReadMessage after %v: %v", got, err)
		}
		got = append(got, fmt.Sprintf("%d:%s=%s", m.Offset, m.Key, m.Value))
	}
	_ = batch.Close()
	if want := "[1:b=two 2:c=three]"; fmt.Sprint(got) != want {
		t.Errorf("read from offset 1: %v, want %s", got, want)
	}

	// Conn-level metadata: the controller and the broker list.
	ctrl, err := conn.Controller()
	if err != nil {
		t.Fatalf("Controller: %v", err)
	}
	if got := net.JoinHostPort(ctrl.Host, fmt.Sprint(ctrl.Port)); got != s.tb.addr {
		t.Errorf("Controller at %s, want %s", got, s.tb.addr)
	}
}

// groupRead joins group, reads n records committing each, and leaves.
func (s *kafkaGoSuite) groupRead(t *testing.T, group, topic string, n int) []record {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{s.tb.addr},
		GroupID:           group,
		Topic:             topic,
		StartOffset:       kafka.FirstOffset,
		MaxWait:           100 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  5 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		ReadBackoffMin:    20 * time.Millisecond,
		ReadBackoffMax:    100 * time.Millisecond,
		MaxAttempts:       3,
	})
	ctx := ctxTimeout(t, 20*time.Second)
	var out []record
	for len(out) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			_ = r.Close()
			t.Fatalf("FetchMessage after %d of %d records: %v", len(out), n, err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			_ = r.Close()
			t.Fatalf("CommitMessages at offset %d: %v", m.Offset, err)
		}
		out = append(out, record{partition: int32(m.Partition), offset: m.Offset, key: string(m.Key), value: m.Value})
	}
	if err := r.Close(); err != nil {
		t.Errorf("Reader.Close: %v", err)
	}
	return out
}

func (s *kafkaGoSuite) consumerGroupResume(t *testing.T) {
	topic := uniqueName("kgo-group")
	group := uniqueName("kgo-group")
	s.createTopic(t, topic, 1)
	w := s.writer(0)
	w.Topic = topic
	defer w.Close()
	send := func(from, to int) {
		var msgs []kafka.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
		}
		if err := w.WriteMessages(ctxTimeout(t, 15*time.Second), msgs...); err != nil {
			t.Fatalf("WriteMessages: %v", err)
		}
	}
	send(0, 5)
	for i, r := range s.groupRead(t, group, topic, 5) {
		if r.offset != int64(i) {
			t.Errorf("first run record %d at offset %d", i, r.offset)
		}
	}
	offs, err := s.client.ConsumerOffsets(ctxTimeout(t, 10*time.Second), kafka.TopicAndGroup{Topic: topic, GroupId: group})
	if err != nil {
		t.Fatalf("ConsumerOffsets: %v", err)
	}
	if offs[0] != 5 {
		t.Errorf("committed offsets after first run: %v, want partition 0 at 5", offs)
	}

	send(5, 8)
	for i, r := range s.groupRead(t, group, topic, 3) {
		if r.offset != int64(5+i) || r.key != fmt.Sprintf("k%d", 5+i) {
			t.Errorf("resumed record %d: %+v, want offset %d", i, r, 5+i)
		}
	}

	dg, err := s.client.DescribeGroups(ctxTimeout(t, 10*time.Second), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	if len(dg.Groups) != 1 || dg.Groups[0].Error != nil || dg.Groups[0].GroupState != "Empty" {
		t.Errorf("DescribeGroups after both readers left: %+v, want one Empty group", dg.Groups)
	}
}
