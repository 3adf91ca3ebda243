// Dead-letter queues of share groups (KIP-1191), as Apache Kafka 4.4 writes them: a share
// group whose errors.deadletterqueue.topic.name group config names a topic gets a record
// there for every record it archives because a consumer rejected it (REJECT) or because it
// was released for the last time at share.delivery.count.limit (a RELEASE, a lock that
// expired, a member that left). The record's headers are __dlq.errors.topic, .partition,
// .offset (the archived record's), .group, .delivery.count and .message ("Offset rejected by
// client." or "Offset delivery count exceeded the threshold."); with
// errors.deadletterqueue.copy.record.enable=true its key and value are the archived
// record's, else null. It goes to partition (source partition mod the topic's partition
// count), with the time of writing as its CreateTime timestamp. The topic must have
// errors.deadletterqueue.group.enable=true, a name that does not start with "__" and that
// starts with errors.deadletterqueue.topic.name.prefix (broker config, default "dlq."); a
// topic that does not exist is created (with errors.deadletterqueue.group.enable=true and
// message.timestamp.type=CreateTime, default partitions and replication factor) when
// errors.deadletterqueue.auto.create.topics.enable=true. A dead letter that cannot be
// written is logged and dropped, as Kafka drops it; the archived record stays archived.
//
// On a cluster, a dead letter whose partition another broker leads is sent to that
// broker over the peer transport ("dead-letter"), which appends it.
//
// Differences from Kafka: dead letters are written one record at a time, in order, by one
// goroutine of the share partition's leader (Kafka batches them per share partition); one
// that is still queued when the broker stops is lost.
package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/topics"
)

// deadLetterQueueLen is how many dead letters wait to be written before more are dropped.
const deadLetterQueueLen = 4096

// deadLetterSink starts the goroutine that writes dead letters and returns the share
// partitions' callback, which queues one without blocking.
func (b *Broker) deadLetterSink() func(share.DeadLetter) {
	ch := make(chan share.DeadLetter, deadLetterQueueLen)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case d := <-ch:
				if err := b.writeDeadLetter(d, stop); err != nil {
					b.logger.Warn("share group: dead letter not written", "group", d.Key.Group, "partition", d.Key.Partition,
						"offset", d.Offset, "topic", d.Topic, "err", err)
				}
			}
		}
	}()
	b.onClose(func() error { close(stop); <-done; return nil })
	return func(d share.DeadLetter) {
		select {
		case ch <- d:
		default:
			b.logger.Warn("share group: dead-letter queue full, dead letter dropped", "group", d.Key.Group, "offset", d.Offset)
		}
	}
}

// deadLetterTopic returns the group's dead-letter topic, creating it when missing and
// allowed.
func (b *Broker) deadLetterTopic(d share.DeadLetter) (*topics.Topic, error) {
	name, group := d.Topic, d.Key.Group
	if strings.HasPrefix(name, "__") {
		return nil, fmt.Errorf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, name)
	}
	if prefix := b.brokerString("errors.deadletterqueue.topic.name.prefix"); !strings.HasPrefix(name, prefix) {
		return nil, fmt.Errorf("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s.", group, name, prefix)
	}
	if t, ok := b.topics.Get(name); ok {
		if on, _ := share.ParseBool(t.Configs["errors.deadletterqueue.group.enable"]); !on {
			return nil, fmt.Errorf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, name)
		}
		return t, nil
	}
	if on, _ := share.ParseBool(b.brokerString("errors.deadletterqueue.auto.create.topics.enable")); !on {
		return nil, fmt.Errorf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, name)
	}
	return b.createDeadLetterTopic(name)
}

func (b *Broker) createDeadLetterTopic(name string) (*topics.Topic, error) {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if t, ok := b.topics.Get(name); ok { // created meanwhile
		return t, nil
	}
	if err := b.checkNewTopicName(name); err != nil {
		return nil, err
	}
	enable, ts := "true", "CreateTime"
	plain, cfg, err := b.validateTopicConfigs(map[string]*string{"errors.deadletterqueue.group.enable": &enable, "message.timestamp.type": &ts})
	if err != nil {
		return nil, err
	}
	t, err := b.createTopic(name, b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor, plain, cfg, nil)
	if err == nil {
		b.logger.Info("share group: created dead-letter topic", "topic", name)
	}
	return t, err
}

// writeDeadLetter writes one dead letter (retrying a partition not led yet, as after the
// topic's creation, until stop).
func (b *Broker) writeDeadLetter(d share.DeadLetter, stop <-chan struct{}) error {
	t, err := b.deadLetterTopic(d)
	if err != nil {
		return err
	}
	src, ok := b.topics.ByID(topics.ID(d.Key.TopicID))
	if !ok {
		return errors.New("the share partition's topic is gone")
	}
	headers := []batch.RecordHeader{
		{Key: "__dlq.errors.topic", Value: []byte(src.Name)},
		{Key: "__dlq.errors.partition", Value: []byte(strconv.Itoa(int(d.Key.Partition)))},
		{Key: "__dlq.errors.offset", Value: []byte(strconv.FormatInt(d.Offset, 10))},
		{Key: "__dlq.errors.group", Value: []byte(d.Key.Group)},
		{Key: "__dlq.errors.delivery.count", Value: []byte(strconv.Itoa(int(d.DeliveryCount)))},
		{Key: "__dlq.errors.message", Value: []byte(d.Cause())},
	}
	var key, value []byte
	if d.Copy {
		key, value = b.recordAt(src.Name, d.Key.Partition, d.Offset)
	}
	dest := d.Key.Partition % t.Partitions
	var last error
	for attempt := 0; attempt < 50; attempt++ {
		if attempt > 0 {
			select {
			case <-stop:
				return last
			case <-time.After(100 * time.Millisecond):
			}
		}
		now := time.Now().UnixMilli()
		bl := batch.NewBuilder()
		bl.BaseTimestamp = now
		bl.AddAt(now, key, value, headers...)
		buf, err := bl.Build()
		if err != nil {
			return err
		}
		last = b.appendDeadLetter(t.Name, dest, buf)
		if errors.Is(last, errDeadLetterNotLed) && b.cluster != nil {
			if im := b.image(); im != nil {
				if ip, ok := im.Partition(t.Name, dest); ok && ip.Leader != metadata.NoLeader && ip.Leader != b.self() {
					last = b.cluster.deadLetterRemote(ip.Leader, deadLetterMsg{Topic: t.Name, Partition: dest, Batch: buf})
				}
			}
		}
		if last == nil || !errors.Is(last, errDeadLetterNotLed) && !errors.Is(last, errDeadLetterPeer) {
			return last
		}
	}
	return last
}

var (
	errDeadLetterNotLed = errors.New("the dead-letter partition is not led here")
	errDeadLetterPeer   = errors.New("the dead-letter partition's leader cannot be reached")
)

// appendDeadLetter appends one dead-letter batch to a partition this broker leads.
func (b *Broker) appendDeadLetter(topic string, partition int32, buf []byte) error {
	part := b.replicas.Get(topic, partition)
	if part == nil || part.Role() != replica.Leader {
		return fmt.Errorf("%w: %s-%d", errDeadLetterNotLed, topic, partition)
	}
	_, err := part.AppendReplicated(buf, log.AppendOptions{}, coordinatorWriteTimeout)
	return err
}

// deadLetterMsg carries a dead letter to its partition's leader.
type deadLetterMsg struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Batch     []byte `json:"batch"`
}

type deadLetterAck struct{}

// deadLetterRemote sends a dead letter to broker id, the leader of its partition.
func (c *clusterNode) deadLetterRemote(id int32, m deadLetterMsg) error {
	addr, ok := c.peers.Addr(uint64(id))
	if !ok {
		return fmt.Errorf("%w: broker %d has no peer address", errDeadLetterPeer, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out deadLetterAck
	if err := c.peers.Call(ctx, addr, "dead-letter", m, &out); err != nil {
		return fmt.Errorf("%w: broker %d: %v", errDeadLetterPeer, id, err)
	}
	return nil
}

// deadLetterLocal serves another broker's deadLetterRemote.
func (c *clusterNode) deadLetterLocal(_ context.Context, m deadLetterMsg) (deadLetterAck, error) {
	if _, err := batch.ParseHeader(m.Batch); err != nil {
		return deadLetterAck{}, err
	}
	return deadLetterAck{}, c.b.appendDeadLetter(m.Topic, m.Partition, m.Batch)
}

// recordAt returns the key and value of the record at offset of topic-partition (nil
// if it cannot be read: the dead letter then carries the headers only, as Kafka's).
func (b *Broker) recordAt(topic string, partition int32, offset int64) (key, value []byte) {
	part := b.replicas.Get(topic, partition)
	if part == nil {
		return nil, nil
	}
	res, err := part.Read(offset, 1<<20, true, false)
	if err != nil {
		return nil, nil
	}
	buf, err := res.Bytes()
	if err != nil {
		return nil, nil
	}
	for len(buf) > 0 {
		h, err := batch.ParseHeader(buf)
		if err != nil || h.TotalSize() > len(buf) {
			return nil, nil
		}
		one := buf[:h.TotalSize()]
		buf = buf[h.TotalSize():]
		if h.LastOffset() < offset {
			continue
		}
		found := false
		_ = batch.ForEachRecord(one, 64<<20, func(r *batch.Record) error {
			if h.BaseOffset+int64(r.OffsetDelta) == offset {
				key, value = append([]byte(nil), r.Key...), append([]byte(nil), r.Value...)
				if r.Key == nil {
					key = nil
				}
				if r.Value == nil {
					value = nil
				}
				found = true
				return errStopRecords
			}
			return nil
		})
		if found || h.BaseOffset > offset {
			break
		}
	}
	return key, value
}

var errStopRecords = errors.New("stop")
