//go:build cgo

package goclients

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestConfluent drives Sluice with confluent-kafka-go, i.e. the librdkafka
// C library it links statically: AdminClient, Producer (every codec,
// idempotence), Consumer (assign from the beginning, and a consumer group
// under both the classic and the KIP-848 "consumer" protocol).
func TestConfluent(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	s := &confluentSuite{tb: tb}
	s.admin = s.newAdmin(t)
	_, libVersion := kafka.LibraryVersion()
	t.Logf("librdkafka %s", libVersion)
	t.Run("admin-configs", s.adminConfigs)
	t.Run("keyed-compacted", s.keyedCompacted)
	t.Run("compaction", s.compaction)
	t.Run("compression", s.compression)
	t.Run("idempotent", s.idempotent)
	t.Run("consumer-group-resume/classic", func(t *testing.T) { s.consumerGroupResume(t, "classic") })
	t.Run("consumer-group-resume/consumer", func(t *testing.T) { s.consumerGroupResume(t, "consumer") })
	t.Run("two-members/classic", func(t *testing.T) { s.twoMembers(t, "classic") })
	t.Run("two-members/consumer", func(t *testing.T) { s.twoMembers(t, "consumer") })
	t.Run("static-leader-restart", s.staticLeaderRestart)
	t.Run("regex-consumer", s.regexConsumer)
	t.Run("timestamps", s.timestamps)
	t.Run("admin-more", s.adminMore)
}

type confluentSuite struct {
	tb    *testBroker
	admin *kafka.AdminClient
}

func (s *confluentSuite) base() kafka.ConfigMap {
	return kafka.ConfigMap{
		"bootstrap.servers":        s.tb.addr,
		"client.id":                "sluice-confluent-test",
		"broker.address.family":    "v4",
		"socket.timeout.ms":        10000,
		"reconnect.backoff.ms":     20,
		"reconnect.backoff.max.ms": 200,
		"log_level":                4, // warnings and errors only
	}
}

func (s *confluentSuite) config(extra kafka.ConfigMap) *kafka.ConfigMap {
	cm := s.base()
	for k, v := range extra {
		cm[k] = v
	}
	return &cm
}

func (s *confluentSuite) newAdmin(t *testing.T) *kafka.AdminClient {
	t.Helper()
	a, err := kafka.NewAdminClient(s.config(nil))
	if err != nil {
		t.Fatalf("NewAdminClient: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

func (s *confluentSuite) createTopic(t *testing.T, name string, partitions int, configs map[string]string) {
	t.Helper()
	res, err := s.admin.CreateTopics(ctxTimeout(t, 10*time.Second),
		[]kafka.TopicSpecification{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1, Config: configs}})
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", name, err)
	}
	if len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateTopics %s: %v", name, res)
	}
}

func (s *confluentSuite) describeTopic(t *testing.T, topic string) map[string]kafka.ConfigEntryResult {
	t.Helper()
	res, err := s.admin.DescribeConfigs(ctxTimeout(t, 10*time.Second),
		[]kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		t.Fatalf("DescribeConfigs %s: %v", topic, err)
	}
	if len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("DescribeConfigs %s: %v", topic, res)
	}
	return res[0].Config
}

func (s *confluentSuite) newProducer(t *testing.T, extra kafka.ConfigMap) *kafka.Producer {
	t.Helper()
	cm := s.config(kafka.ConfigMap{"linger.ms": 5, "acks": "all"})
	for k, v := range extra {
		(*cm)[k] = v
	}
	p, err := kafka.NewProducer(cm)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// produce sends msgs and waits for every delivery report; it returns the
// reported positions in order.
func produce(t *testing.T, p *kafka.Producer, msgs []*kafka.Message) []kafka.TopicPartition {
	t.Helper()
	dr := make(chan kafka.Event, len(msgs))
	for i, m := range msgs {
		m.Opaque = i
		if err := p.Produce(m, dr); err != nil {
			t.Fatalf("Produce %d: %v", i, err)
		}
	}
	out := make([]kafka.TopicPartition, len(msgs))
	timeout := time.After(15 * time.Second)
	for range msgs {
		select {
		case ev := <-dr:
			m, ok := ev.(*kafka.Message)
			if !ok {
				t.Fatalf("delivery report: unexpected event %v", ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery of record %v: %v", m.Opaque, m.TopicPartition.Error)
			}
			out[m.Opaque.(int)] = m.TopicPartition
		case <-timeout:
			t.Fatalf("delivery reports: deadline passed")
		}
	}
	return out
}

// readMessages polls c until n messages arrived or the deadline passed.
func readMessages(t *testing.T, c *kafka.Consumer, n int, timeout time.Duration) []*kafka.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var out []*kafka.Message
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("consumer: got %d of %d records before the deadline", len(out), n)
		}
		m, err := c.ReadMessage(100 * time.Millisecond)
		if err != nil {
			var kerr kafka.Error
			if errors.As(err, &kerr) && kerr.IsTimeout() {
				continue
			}
			t.Fatalf("ReadMessage after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// consume reads n records of one partition from its first offset.
func (s *confluentSuite) consume(t *testing.T, topic string, partition int32, n int) []record {
	t.Helper()
	return s.consumeUntil(t, topic, partition, func(got []record) bool { return len(got) >= n })
}

// consumeUntil reads one partition from its first offset until done says
// so.
func (s *confluentSuite) consumeUntil(t *testing.T, topic string, partition int32, done func([]record) bool) []record {
	t.Helper()
	c, err := kafka.NewConsumer(s.config(kafka.ConfigMap{
		"group.id":           uniqueName("ckg-assign"),
		"enable.auto.commit": false,
		"fetch.wait.max.ms":  100,
	}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: partition, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	var out []record
	deadline := time.Now().Add(15 * time.Second)
	for !done(out) {
		if time.Now().After(deadline) {
			t.Fatalf("consume %s/%d: deadline passed after %s", topic, partition, formatRecords(out))
		}
		for _, m := range readMessages(t, c, 1, time.Until(deadline)) {
			out = append(out, record{partition: m.TopicPartition.Partition, offset: int64(m.TopicPartition.Offset), key: string(m.Key), value: m.Value})
		}
	}
	return out
}

func (s *confluentSuite) adminConfigs(t *testing.T) {
	topic := uniqueName("ckg-cfg")
	s.createTopic(t, topic, 3, map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"})

	res, err := s.admin.CreateTopics(ctxTimeout(t, 10*time.Second), []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}})
	if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrTopicAlreadyExists {
		t.Errorf("second CreateTopics: %v %v, want %v", res, err, kafka.ErrTopicAlreadyExists)
	}
	res, err = s.admin.CreateTopics(ctxTimeout(t, 10*time.Second), []kafka.TopicSpecification{{
		Topic: uniqueName("ckg-bad"), NumPartitions: 1, ReplicationFactor: 1, Config: map[string]string{"cleanup.policy": "shred"},
	}})
	if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrInvalidConfig {
		t.Errorf("CreateTopics with cleanup.policy=shred: %v %v, want %v", res, err, kafka.ErrInvalidConfig)
	}

	md, err := s.admin.GetMetadata(&topic, false, 10000)
	if err != nil {
		t.Fatalf("GetMetadata: %v", err)
	}
	if tm := md.Topics[topic]; tm.Error.Code() != kafka.ErrNoError || len(tm.Partitions) != 3 {
		t.Errorf("metadata of %s: %+v", topic, tm)
	}
	dt, err := s.admin.DescribeTopics(ctxTimeout(t, 10*time.Second), kafka.NewTopicCollectionOfTopicNames([]string{topic}))
	if err != nil {
		t.Fatalf("DescribeTopics: %v", err)
	}
	if len(dt.TopicDescriptions) != 1 || dt.TopicDescriptions[0].Error.Code() != kafka.ErrNoError || len(dt.TopicDescriptions[0].Partitions) != 3 {
		t.Errorf("DescribeTopics %s: %+v", topic, dt.TopicDescriptions)
	}
	cl, err := s.admin.DescribeCluster(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if len(cl.Nodes) != 1 || cl.ClusterID == nil || *cl.ClusterID == "" {
		t.Errorf("DescribeCluster: %+v", cl)
	}

	cfg := s.describeTopic(t, topic)
	if e := cfg["cleanup.policy"]; e.Value != "compact" || e.Source != kafka.ConfigSourceDynamicTopic {
		t.Errorf("cleanup.policy = %+v, want compact from the topic", e)
	}
	if e := cfg["min.cleanable.dirty.ratio"]; e.Value != "0.1" {
		t.Errorf("min.cleanable.dirty.ratio = %+v, want 0.1", e)
	}
	if e, ok := cfg["retention.bytes"]; !ok || !e.IsDefault {
		t.Errorf("retention.bytes = %+v (found %v), want a default entry", e, ok)
	}

	// Legacy AlterConfigs replaces the override set.
	ar, err := s.admin.AlterConfigs(ctxTimeout(t, 10*time.Second), []kafka.ConfigResource{{
		Type: kafka.ResourceTopic, Name: topic,
		Config: kafka.StringMapToConfigEntries(map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "600000"}, kafka.AlterOperationSet),
	}})
	if err != nil || len(ar) != 1 || ar[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("AlterConfigs: %v %v", ar, err)
	}
	cfg = s.describeTopic(t, topic)
	if e := cfg["cleanup.policy"]; e.Value != "compact,delete" {
		t.Errorf("after AlterConfigs cleanup.policy = %+v", e)
	}
	if e := cfg["min.cleanable.dirty.ratio"]; !e.IsDefault {
		t.Errorf("after AlterConfigs min.cleanable.dirty.ratio = %+v, want back to default", e)
	}

	ir, err := s.admin.IncrementalAlterConfigs(ctxTimeout(t, 10*time.Second), []kafka.ConfigResource{{
		Type: kafka.ResourceTopic, Name: topic,
		Config: []kafka.ConfigEntry{
			{Name: "cleanup.policy", Value: "delete", IncrementalOperation: kafka.AlterConfigOpTypeSubtract},
			{Name: "segment.ms", Value: "3600000", IncrementalOperation: kafka.AlterConfigOpTypeSet},
		},
	}})
	if err != nil || len(ir) != 1 || ir[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("IncrementalAlterConfigs: %v %v", ir, err)
	}
	cfg = s.describeTopic(t, topic)
	if e := cfg["cleanup.policy"]; e.Value != "compact" {
		t.Errorf("after subtracting delete, cleanup.policy = %+v, want compact", e)
	}
	if e := cfg["segment.ms"]; e.Value != "3600000" {
		t.Errorf("segment.ms = %+v", e)
	}
	if e := cfg["retention.ms"]; e.Value != "600000" {
		t.Errorf("retention.ms = %+v, want 600000 kept", e)
	}

	bres, err := s.admin.DescribeConfigs(ctxTimeout(t, 10*time.Second), []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: "1"}})
	if err != nil || len(bres) != 1 || bres[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("DescribeConfigs broker: %v %v", bres, err)
	}
	if _, ok := bres[0].Config["log.retention.hours"]; !ok {
		t.Errorf("broker configs lack log.retention.hours (%d entries)", len(bres[0].Config))
	}
}

func (s *confluentSuite) keyedCompacted(t *testing.T) {
	topic := uniqueName("ckg-compact")
	s.createTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	p := s.newProducer(t, nil)
	var msgs []*kafka.Message
	for _, r := range keyedRecords() {
		msgs = append(msgs, &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            []byte(r.key),
			Value:          r.value,
			Headers:        []kafka.Header{{Key: "origin", Value: []byte("confluent")}},
		})
	}
	for i, tp := range produce(t, p, msgs) {
		if tp.Partition != 0 || int64(tp.Offset) != int64(i) {
			t.Errorf("record %d delivered to %d@%d, want 0@%d", i, tp.Partition, tp.Offset, i)
		}
	}
	checkKeyed(t, s.consume(t, topic, 0, len(msgs)))
}

func (s *confluentSuite) compaction(t *testing.T) {
	topic := uniqueName("ckg-cleaned")
	s.createTopic(t, topic, 1, compactingTopicConfigs)
	p := s.newProducer(t, kafka.ConfigMap{"linger.ms": 0})
	for _, r := range compactionRecords() {
		// One delivery at a time: one batch each.
		produce(t, p, []*kafka.Message{{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
			Key:            []byte(r.key),
			Value:          r.value,
		}})
	}
	waitCompacted(t, func() []record {
		return s.consumeUntil(t, topic, 0, func(got []record) bool { return len(got) > 0 && got[len(got)-1].key == "end" })
	})
}

func (s *confluentSuite) compression(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := uniqueName("ckg-" + codec)
			s.createTopic(t, topic, 1, nil)
			p := s.newProducer(t, kafka.ConfigMap{"compression.type": codec})
			const n = 20
			var msgs []*kafka.Message
			for i := 0; i < n; i++ {
				msgs = append(msgs, &kafka.Message{
					TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
					Key:            []byte(fmt.Sprintf("key-%d", i)),
					Value:          []byte(fmt.Sprintf("%s value %d, repeated repeated repeated repeated", codec, i)),
				})
			}
			produce(t, p, msgs)
			for i, r := range s.consume(t, topic, 0, n) {
				if r.offset != int64(i) || r.key != string(msgs[i].Key) || string(r.value) != string(msgs[i].Value) {
					t.Errorf("record %d: %+v, want offset %d value %q", i, r, i, msgs[i].Value)
				}
			}
		})
	}
}

func (s *confluentSuite) idempotent(t *testing.T) {
	topic := uniqueName("ckg-idem")
	s.createTopic(t, topic, 2, nil)
	p := s.newProducer(t, kafka.ConfigMap{"enable.idempotence": true, "compression.type": "lz4"})
	const n = 40
	var msgs []*kafka.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 2)},
			Key:            []byte(fmt.Sprintf("k%d", i)),
			Value:          []byte(fmt.Sprintf("v%d", i)),
		})
	}
	next := map[int32]int64{}
	for i, tp := range produce(t, p, msgs) {
		if int64(tp.Offset) != next[tp.Partition] {
			t.Errorf("record %d at %d@%d, want offset %d", i, tp.Partition, tp.Offset, next[tp.Partition])
		}
		next[tp.Partition]++
	}
	// The producer must not have been fenced or hit a sequence error.
	select {
	case ev := <-p.Events():
		if e, ok := ev.(kafka.Error); ok {
			t.Errorf("idempotent producer error event: %v (fatal %v)", e, e.IsFatal())
		}
	default:
	}
	for part := int32(0); part < 2; part++ {
		got := s.consume(t, topic, part, n/2)
		for i, r := range got {
			if want := fmt.Sprintf("v%d", 2*i+int(part)); string(r.value) != want {
				t.Errorf("partition %d record %d: %q, want %q", part, i, r.value, want)
			}
		}
	}
}

// groupRead joins group with a fresh consumer, reads n records committing
// each synchronously, and closes (leaving the group).
func (s *confluentSuite) groupRead(t *testing.T, protocol, group, topic string, n int) []record {
	t.Helper()
	extra := kafka.ConfigMap{
		"group.id":           group,
		"group.protocol":     protocol,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
		"fetch.wait.max.ms":  100,
	}
	if protocol == "classic" {
		extra["session.timeout.ms"] = 6000
		extra["heartbeat.interval.ms"] = 500
	}
	c, err := kafka.NewConsumer(s.config(extra))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	var out []record
	for _, m := range readMessages(t, c, n, 20*time.Second) {
		if _, err := c.CommitMessage(m); err != nil {
			t.Fatalf("CommitMessage at %v: %v", m.TopicPartition, err)
		}
		out = append(out, record{partition: m.TopicPartition.Partition, offset: int64(m.TopicPartition.Offset), key: string(m.Key), value: m.Value})
	}
	if err := c.Close(); err != nil {
		t.Errorf("Consumer.Close: %v", err)
	}
	return out
}

func (s *confluentSuite) consumerGroupResume(t *testing.T, protocol string) {
	topic := uniqueName("ckg-group-" + protocol)
	group := uniqueName("ckg-group-" + protocol)
	s.createTopic(t, topic, 1, nil)
	p := s.newProducer(t, nil)
	send := func(from, to int) {
		var msgs []*kafka.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
				Key:            []byte(fmt.Sprintf("k%d", i)),
				Value:          []byte(fmt.Sprintf("v%d", i)),
			})
		}
		produce(t, p, msgs)
	}
	send(0, 5)
	for i, r := range s.groupRead(t, protocol, group, topic, 5) {
		if r.offset != int64(i) {
			t.Errorf("first run record %d at offset %d", i, r.offset)
		}
	}
	lo, err := s.admin.ListConsumerGroupOffsets(ctxTimeout(t, 10*time.Second), []kafka.ConsumerGroupTopicPartitions{{
		Group: group, Partitions: []kafka.TopicPartition{{Topic: &topic, Partition: 0}},
	}})
	if err != nil {
		t.Fatalf("ListConsumerGroupOffsets: %v", err)
	}
	if len(lo.ConsumerGroupsTopicPartitions) != 1 || len(lo.ConsumerGroupsTopicPartitions[0].Partitions) != 1 ||
		lo.ConsumerGroupsTopicPartitions[0].Partitions[0].Offset != 5 {
		t.Errorf("committed offsets after first run: %+v, want 5", lo.ConsumerGroupsTopicPartitions)
	}

	send(5, 8)
	for i, r := range s.groupRead(t, protocol, group, topic, 3) {
		if r.offset != int64(5+i) || r.key != fmt.Sprintf("k%d", 5+i) {
			t.Errorf("resumed record %d: %+v, want offset %d", i, r, 5+i)
		}
	}

	ctx := ctxTimeout(t, 10*time.Second)
	waitFor(t, 10*time.Second, "group "+group+" empty after both consumers left", func() error {
		dg, err := s.admin.DescribeConsumerGroups(ctx, []string{group})
		if err != nil {
			return err
		}
		if len(dg.ConsumerGroupDescriptions) != 1 {
			return fmt.Errorf("%d descriptions", len(dg.ConsumerGroupDescriptions))
		}
		d := dg.ConsumerGroupDescriptions[0]
		if d.Error.Code() != kafka.ErrNoError {
			return d.Error
		}
		if d.State != kafka.ConsumerGroupStateEmpty {
			return fmt.Errorf("state %v, %d members", d.State, len(d.Members))
		}
		wantType := kafka.ConsumerGroupTypeClassic
		if protocol == "consumer" {
			wantType = kafka.ConsumerGroupTypeConsumer
		}
		if d.Type != wantType {
			t.Errorf("group type %v, want %v", d.Type, wantType)
		}
		return nil
	})
	lg, err := s.admin.ListConsumerGroups(ctx)
	if err != nil {
		t.Fatalf("ListConsumerGroups: %v", err)
	}
	found := false
	for _, g := range lg.Valid {
		if g.GroupID == group {
			found = true
		}
	}
	if !found {
		t.Errorf("ListConsumerGroups lacks %s: %+v", group, lg.Valid)
	}
}
