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
