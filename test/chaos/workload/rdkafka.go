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

// AppendRdkafka runs one librdkafka idempotent producer process after another
// (confluent-kafka-go, its bundled librdkafka) until ctx ends. Each operation
// sends one value to a random partition of the append topic and waits for its
// delivery report.
func (e *Env) AppendRdkafka(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 4))
	topic := AppendTopic
	for ctx.Err() == nil {
		proc := e.NextProcess()
		p, err := kafka.NewProducer(&kafka.ConfigMap{
			"bootstrap.servers":     strings.Join(e.Addrs, ","),
			"broker.address.family": "v4",
			"enable.idempotence":    true,
			"acks":                  "all",
			"linger.ms":             0,
			"message.timeout.ms":    8000,
			"socket.timeout.ms":     5000,
			"request.timeout.ms":    5000,
			"log_level":             2, // connection errors during kills are expected
		})
		if err != nil {
			e.Logf("librdkafka producer: %v", err)
			return
		}
		evDone := make(chan struct{})
		go func() { // drain errors and logs so that librdkafka never blocks on them
			defer close(evDone)
			for range p.Events() {
			}
		}()
		for ctx.Err() == nil {
			wait(ctx, e.WriterPause)
			part := int32(rng.IntN(e.Partitions))
			v := e.NextValue()
			key := Key(topic, part)
			ms := []history.Mop{{F: history.FSend, Key: key, Value: history.I64(v)}}
			e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FSend, Client: "librdkafka", Value: ms})
			dr := make(chan kafka.Event, 1)
			err := p.Produce(&kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part},
				Value:          []byte(strconv.FormatInt(v, 10)),
			}, dr)
			if err != nil {
				// Not enqueued: certainly not written.
				e.Rec.Record(history.Op{Process: proc, Type: history.Fail, F: history.FSend, Client: "librdkafka", Value: ms, Error: err.Error()})
				break
			}
			var res error
			select {
			case ev := <-dr:
				m, ok := ev.(*kafka.Message)
				switch {
				case !ok:
					res = fmt.Errorf("unexpected delivery event %v", ev)
				case m.TopicPartition.Error != nil:
					res = m.TopicPartition.Error
				default:
					ms = []history.Mop{{F: history.FSend, Key: key, Value: history.I64(v), Offset: history.I64(int64(m.TopicPartition.Offset))}}
				}
			case <-time.After(15 * time.Second):
				res = fmt.Errorf("no delivery report within 15s")
			}
			typ := history.OK
			if res != nil {
				typ = history.Info // maybe written
			}
			e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FSend, Client: "librdkafka", Value: ms, Error: errText(res)})
			if res != nil {
				break
			}
		}
		_ = p.Purge(kafka.PurgeQueue | kafka.PurgeInFlight | kafka.PurgeNonBlocking)
		p.Close()
		<-evDone
	}
}

// ConsumerRdkafka polls every partition of topic from the log start with a
// librdkafka consumer at the given isolation level (manual assignment, no
// group membership, nothing committed) until ctx ends, starting over as a
// new process every so often.
func (e *Env) ConsumerRdkafka(ctx context.Context, topic, iso string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	var parts []kafka.TopicPartition
	for p := range e.Partitions {
		parts = append(parts, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	for ctx.Err() == nil {
		proc := e.NextProcess()
		c, err := kafka.NewConsumer(&kafka.ConfigMap{
			"bootstrap.servers":     strings.Join(e.Addrs, ","),
			"broker.address.family": "v4",
			"group.id":              fmt.Sprintf("sluice-chaos-unused-%d", proc), // required; never joined
			"isolation.level":       iso,
			"enable.auto.commit":    false,
			"auto.offset.reset":     "earliest",
			"socket.timeout.ms":     5000,
			"log_level":             2,
		})
		if err != nil {
			e.Logf("librdkafka consumer: %v", err)
			return
		}
		if err := c.Assign(parts); err != nil {
			e.Logf("librdkafka consumer assign: %v", err)
			c.Close()
			return
		}
		polls := 150 + rng.IntN(250)
		for i := 0; i < polls && ctx.Err() == nil; i++ {
			wait(ctx, e.PollPause)
			e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Client: "librdkafka", Isolation: iso})
			idx := map[string]int{}
			var ms []history.Mop
			deadline := time.Now().Add(500 * time.Millisecond)
			for n := 0; n < 1000 && time.Now().Before(deadline); {
				ev := c.Poll(50)
				m, ok := ev.(*kafka.Message)
				if !ok || m.TopicPartition.Error != nil {
					continue
				}
				n++
				key := Key(*m.TopicPartition.Topic, m.TopicPartition.Partition)
				v, err := strconv.ParseInt(string(m.Value), 10, 64)
				if err != nil {
					v = -1
				}
				j, ok := idx[key]
				if !ok {
					j = len(ms)
					idx[key] = j
					ms = append(ms, history.Mop{F: history.FPoll, Key: key})
				}
				ms[j].Records = append(ms[j].Records, [2]int64{int64(m.TopicPartition.Offset), v})
			}
			e.Rec.Record(history.Op{Process: proc, Type: history.OK, F: history.FPoll, Client: "librdkafka", Isolation: iso, Value: ms})
		}
		c.Close()
	}
}
