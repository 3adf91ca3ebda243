// DescribeProducers (key 61), v0.
//
// Reports, per requested partition, the idempotent producers the partition
// currently remembers — the same per-partition producer.State that Produce
// checks sequences against (init_producer_id.go installs one in every
// log): producer id, epoch, last sequence, last timestamp. Producers expire
// after producer.id.expiration.ms, as in Kafka (except while a transaction
// is ongoing). coordinator_epoch is that of the producer's last transaction
// marker on the partition (-1 if none), current_txn_start_offset the first
// offset of its ongoing transaction there (-1 if none). Producers are listed
// by ascending id.
//
// Errors, as Apache Kafka: an illegal topic name gets INVALID_TOPIC_EXCEPTION
// with the reason, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION,
// for every requested partition of that topic.

package broker

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/producer"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeProducers, (*Broker).handleDescribeProducers) }

func (b *Broker) handleDescribeProducers(_ context.Context, r *wire.Request, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		topicCode, topicMsg := int16(0), (*string)(nil)
		if !b.allowed(r, authz.OpRead, authz.ResourceTopic, t.Topic) { // Kafka: READ on the topic
			topicCode = kerr.TopicAuthorizationFailed.Code
		} else if err := topics.ValidateName(t.Topic); err != nil {
			topicCode, topicMsg = kerr.InvalidTopicException.Code, errorMessage(err)
		} else if _, ok := b.topics.Get(t.Topic); !ok {
			topicCode = kerr.UnknownTopicOrPartition.Code
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if topicCode != 0 {
				rp.ErrorCode, rp.ErrorMessage = topicCode, topicMsg
			} else {
				b.describePartitionProducers(&rp, t.Topic, p)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) describePartitionProducers(rp *kmsg.DescribeProducersResponseTopicPartition, topic string, partition int32) {
	p, _, code := b.partition(topic, partition)
	if code == 0 {
		code = p.CheckLeader(-1)
	}
	if code != 0 {
		rp.ErrorCode = code
		return
	}
	if l := b.logs.Get(topic, partition); l != nil {
		_ = l.Load() // a log not used since a clean start rebuilds its producer state on load
	}
	s := b.producers.get(log.TopicPartition{Topic: topic, Partition: partition})
	if s == nil {
		return // no guard installed: no producer is tracked here
	}
	infos := s.Producers()
	slices.SortFunc(infos, func(x, y producer.ProducerInfo) int { return cmp.Compare(x.ProducerID, y.ProducerID) })
	rp.ActiveProducers = make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(infos))
	for _, pi := range infos {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = pi.ProducerID
		ap.ProducerEpoch = int32(pi.Epoch)
		ap.LastSequence = pi.LastSequence
		ap.LastTimestamp = pi.LastTimestamp
		ap.CoordinatorEpoch = pi.CoordinatorEpoch
		ap.CurrentTxnStartOffset = pi.CurrentTxnStartOffset
		rp.ActiveProducers = append(rp.ActiveProducers, ap)
	}
}
