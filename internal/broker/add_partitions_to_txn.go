// AddPartitionsToTxn (key 24), v0–v3: a transactional producer adds the
// partitions it is about to write to its ongoing transaction (the
// coordinator records them in __transaction_state, so that EndTxn writes a
// marker to each). A partition that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION and the others of the request
// OPERATION_NOT_ATTEMPTED, as Kafka answers; otherwise every partition gets
// the coordinator's answer (txn.Coordinator.AddPartitions).
//
// Under transaction version 2 (KIP-890 part 2) clients send none: the
// partition leader adds the partition of a Produce v12+ itself
// (txn_coord_verify.go).
//
// Differs from Kafka: v4–v5 (the broker-to-broker batched form Kafka's
// partition leaders send to the coordinator) are not advertised; a Sluice
// leader asks the coordinator over its peer listener, and clients send at
// most v3. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH below v2, as
// Kafka does.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AddPartitionsToTxn, (*Broker).handleAddPartitionsToTxn) }

func (b *Broker) handleAddPartitionsToTxn(_ context.Context, r *wire.Request, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	// Authorization as Kafka: WRITE on the transactional id (else every
	// partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic
	// (else TOPIC_AUTHORIZATION_FAILED and nothing is added, the others
	// OPERATION_NOT_ATTEMPTED).
	txnDenied := b.authz != nil && !b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID)
	var denied map[string]bool
	if !txnDenied {
		names := make([]string, len(req.Topics))
		for i, t := range req.Topics {
			names[i] = t.Topic
		}
		denied = b.deniedTopics(r, authz.OpWrite, names)
	}
	var parts []txn.TopicPartition
	missing := txnDenied || len(denied) > 0
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if code := b.partitionExists(t.Topic, p); code != 0 {
				missing = true
			}
			parts = append(parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	var code int16
	if !missing {
		code = fencedForVersion(b.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts), req.Version, 2)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode = code
			if missing {
				rp.ErrorCode = kerr.OperationNotAttempted.Code
				if c := b.partitionExists(t.Topic, p); c != 0 {
					rp.ErrorCode = c
				}
				if denied[t.Topic] {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				if txnDenied {
					rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fencedForVersion turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for request
// versions below since (the version that introduced PRODUCER_FENCED), as Kafka does.
func fencedForVersion(code, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
