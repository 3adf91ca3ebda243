// WriteTxnMarkers (key 27), v1–v2 (v0 was removed in Kafka 4.0): in Kafka the transaction coordinator
// sends it to partition leaders; here the coordinator writes its markers
// in-process, and the API serves operators: kafka-transactions.sh abort
// (Admin.abortTransaction) ends a hanging transaction on a partition by
// sending a marker for its producer id and epoch. Each marker is appended to
// every listed partition (through the group coordinator for
// __consumer_offsets, so pending transactional offsets are decided too).
// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION for a missing partition,
// the log's code for a refused marker (INVALID_PRODUCER_EPOCH for an epoch
// older than the partition's, TRANSACTION_COORDINATOR_FENCED for a
// coordinator epoch older than the last marker's), KAFKA_STORAGE_ERROR when
// the write fails. v2 (KIP-1228) carries the transaction version of each
// marker's transaction: from transaction version 2 the marker's producer
// epoch must be newer than the partition's (the coordinator bumped it),
// unless it repeats a marker already written, else INVALID_PRODUCER_EPOCH,
// as Kafka's ProducerAppendInfo checks it.
package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.WriteTxnMarkers, (*Broker).handleWriteTxnMarkers) }

func (b *Broker) handleWriteTxnMarkers(_ context.Context, r *wire.Request, req *kmsg.WriteTxnMarkersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	// Broker-to-broker in Kafka: CLUSTER_ACTION on the cluster, else every
	// partition CLUSTER_AUTHORIZATION_FAILED and nothing is written.
	clusterDenied := !b.allowedCluster(r, authz.OpClusterAction)
	for _, mk := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = mk.ProducerID
		m := batch.Marker{ProducerID: mk.ProducerID, ProducerEpoch: mk.ProducerEpoch, Type: batch.ControlAbort,
			CoordinatorEpoch: mk.CoordinatorEpoch, Timestamp: b.now().UnixMilli(), TransactionVersion: mk.TransactionVersion}
		if mk.Committed {
			m.Type = batch.ControlCommit
		}
		for _, t := range mk.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if clusterDenied {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else {
					rp.ErrorCode = b.writeMarkerCode(txn.TopicPartition{Topic: t.Topic, Partition: p}, m)
				}
				if rp.ErrorCode == 0 {
					b.logger.Info("transaction marker written on request", "topic", t.Topic, "partition", p,
						"producer_id", m.ProducerID, "producer_epoch", m.ProducerEpoch, "marker", m.Type,
						"client_id", r.Header.ClientIDString())
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

// writeMarkerCode writes m to tp and returns the Kafka error code of the outcome.
func (b *Broker) writeMarkerCode(tp txn.TopicPartition, m batch.Marker) int16 {
	err := txnMarkers{b: b, local: true}.WriteMarker(tp, m)
	if err == nil {
		return 0
	}
	if errors.Is(err, txn.ErrPartitionGone) {
		return kerr.UnknownTopicOrPartition.Code
	}
	var ke kafkaCoder
	if errors.As(err, &ke) && ke.KafkaCode() != 0 {
		return ke.KafkaCode()
	}
	b.logger.Error("cannot write transaction marker", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	return kerr.KafkaStorageError.Code
}
