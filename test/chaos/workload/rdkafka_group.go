package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-broker/sluice/test/chaos/history"
)

// GroupMemberRdkafka runs one librdkafka member of the consumer group
// (Group, the same group as GroupMember's franz-go members) after another
// until ctx ends. The members use the cooperative-sticky assignor, as
// franz-go's do by default, so that both clients share the group. Each
// member polls the append topic for about half a second at a time, records
// what it got (group-poll), and commits, synchronously, the offsets after
// the records it polled of the partitions it still owns (commit: ok =
// acknowledged). A partition is revoked only inside a poll, so between a
// poll and its commit no other member can own one this member commits.
// Every 20 to 60 polls the member goes away: it closes (leaving the group),
// or, with a static instance id, just stops (the group notices when its
// session times out). A new member then joins.
func (e *Env) GroupMemberRdkafka(ctx context.Context, slot int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 8))
	for ctx.Err() == nil {
		proc := e.NextProcess()
		cfg := &kafka.ConfigMap{
			"bootstrap.servers":             strings.Join(e.Addrs, ","),
			"broker.address.family":         "v4",
			"group.id":                      Group,
			"partition.assignment.strategy": "cooperative-sticky",
			"enable.auto.commit":            false,
			"auto.offset.reset":             "earliest",
			"session.timeout.ms":            6000,
			"heartbeat.interval.ms":         500,
			"max.poll.interval.ms":          20000,
			"socket.timeout.ms":             5000,
			"fetch.wait.max.ms":             500,
			"log_level":                     2, // connection errors during kills are expected
		}
		static := rng.IntN(3) == 0
		if static {
			_ = cfg.SetKey("group.instance.id", "chaos-rdkafka-member-"+strconv.Itoa(slot))
		}
		c, err := kafka.NewConsumer(cfg)
		if err != nil {
			e.Logf("librdkafka group member: %v", err)
			return
		}
		if err := c.Subscribe(AppendTopic, nil); err != nil {
			e.Logf("librdkafka group member subscribe: %v", err)
			c.Close()
			return
		}
		polls := 20 + rng.IntN(40)
		for i := 0; i < polls && ctx.Err() == nil; i++ {
			wait(ctx, e.PollPause)
			if !e.rdkafkaGroupPoll(c, proc) {
				break
			}
		}
		closed := make(chan struct{})
		go func() { _ = c.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(15 * time.Second):
			e.Logf("librdkafka group member process %d: Close still blocked after 15s; going on", proc)
		}
	}
}

// rdkafkaGroupPoll polls for up to half a second, records the records and
// commits the offsets after them; false when the member should be replaced
// (its commit failed).
func (e *Env) rdkafkaGroupPoll(c *kafka.Consumer, proc int) bool {
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FGroupPoll, Client: "librdkafka"})
	idx := map[string]int{}
	var ms []history.Mop
	next := map[string]kafka.TopicPartition{}
	var lastErr error
	deadline := time.Now().Add(500 * time.Millisecond)
	for n := 0; n < 500 && time.Now().Before(deadline); {
		switch ev := c.Poll(50).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				lastErr = ev.TopicPartition.Error
				continue
			}
			n++
			key := Key(*ev.TopicPartition.Topic, ev.TopicPartition.Partition)
			v, err := strconv.ParseInt(string(ev.Value), 10, 64)
			if err != nil {
				v = -1
			}
			j, ok := idx[key]
			if !ok {
				j = len(ms)
				idx[key] = j
				ms = append(ms, history.Mop{F: history.FPoll, Key: key})
			}
			off := int64(ev.TopicPartition.Offset)
			ms[j].Records = append(ms[j].Records, [2]int64{off, v})
			tp := ev.TopicPartition
			tp.Offset = kafka.Offset(off + 1)
			next[key] = tp
		case kafka.Error:
			lastErr = ev
		}
	}
	typ, errS := history.OK, ""
	if lastErr != nil && len(ms) == 0 {
		typ, errS = history.Fail, lastErr.Error()
	}
	e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FGroupPoll, Client: "librdkafka", Value: ms, Error: errS})
	if len(next) == 0 {
		return true
	}
	// Only the partitions still assigned: one revoked during the poll may
	// be another member's already.
	assigned, err := c.Assignment()
	if err != nil {
		return true
	}
	var offs []kafka.TopicPartition
	var cms []history.Mop
	for _, a := range assigned {
		key := Key(*a.Topic, a.Partition)
		if tp, ok := next[key]; ok {
			offs = append(offs, tp)
			cms = append(cms, history.Mop{F: history.MCommit, Key: key, Offset: history.I64(int64(tp.Offset))})
		}
	}
	if len(offs) == 0 {
		return true
	}
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FCommit, Client: "librdkafka", Value: cms})
	res, err := c.CommitOffsets(offs)
	if err == nil {
		for _, tp := range res {
			if tp.Error != nil {
				err = tp.Error
				break
			}
		}
	}
	typ = history.OK
	if err != nil {
		typ = history.Info
		err = fmt.Errorf("commit: %w", err)
	}
	e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FCommit, Client: "librdkafka", Value: cms, Error: errText(err)})
	return err == nil
}
