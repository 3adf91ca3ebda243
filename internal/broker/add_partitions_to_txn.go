// AddPartitionsToTxn (key 24), v0–v5: a transactional producer adds the
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
// v4–v5 are Kafka's broker-to-broker batched form (KIP-890 part 1): several
// transactions per request, CLUSTER_ACTION on the cluster instead of WRITE
// on the transactional id and topics (else a top-level
// CLUSTER_AUTHORIZATION_FAILED), and VerifyOnly, which asks whether the
// partitions are already in the transaction (0, else TRANSACTION_ABORTABLE)
// without adding them; v5 only allows TRANSACTION_ABORTABLE in answers.
// Sluice's own partition leaders ask a coordinator on another node over the
// peer listener (cluster_txn.go) rather than with v4+; clients send at most
// v3. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH below v2, as Kafka
// does.
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

// addPartitionsBatchedVersion is the first version naming several
// transactions (Kafka's broker-to-broker form).
const addPartitionsBatchedVersion = 4

func (b *Broker) handleAddPartitionsToTxn(_ context.Context, r *wire.Request, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < addPartitionsBatchedVersion {
		topics := make([]txnTopicPartitions, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = txnTopicPartitions{topic: t.Topic, partitions: t.Partitions}
		}
		codes := b.addPartitionsForTxn(r, req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics)
		for i, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	// v4+ come from partition leaders: CLUSTER_ACTION on the cluster, else a
	// top-level CLUSTER_AUTHORIZATION_FAILED (Kafka's error response).
	if !b.allowedCluster(r, authz.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, tx := range req.Transactions {
		topics := make([]txnTopicPartitions, len(tx.Topics))
		for i, t := range tx.Topics {
			topics[i] = txnTopicPartitions{topic: t.Topic, partitions: t.Partitions}
		}
		codes := b.addPartitionsForTxn(r, req.Version, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for i, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// txnTopicPartitions is one topic of an AddPartitionsToTxn transaction.
type txnTopicPartitions struct {
	topic      string
	partitions []int32
}

// addPartitionsForTxn handles one transaction of an AddPartitionsToTxn
// request and returns a code per partition (codes[i][j] for
// topics[i].partitions[j]). Below v4 (clients) authorization is Kafka's:
// WRITE on the transactional id (else every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and WRITE on each topic (else
// TOPIC_AUTHORIZATION_FAILED); v4+ (brokers, CLUSTER_ACTION checked by the
// caller) need neither. A denied or missing partition fails the whole
// transaction: nothing is added and the others get OPERATION_NOT_ATTEMPTED.
// verifyOnly (v4+) asks whether the partitions are already in the
// transaction instead of adding them (txn.Coordinator.VerifyPartitions).
func (b *Broker) addPartitionsForTxn(r *wire.Request, version int16, tid string, pid int64, epoch int16, verifyOnly bool, topics []txnTopicPartitions) [][]int16 {
	clientForm := version < addPartitionsBatchedVersion
	codes := make([][]int16, len(topics))
	for i, t := range topics {
		codes[i] = make([]int16, len(t.partitions))
	}
	fill := func(code func(i, j int) int16) [][]int16 {
		for i := range topics {
			for j := range topics[i].partitions {
				codes[i][j] = code(i, j)
			}
		}
		return codes
	}
	if clientForm && b.authz != nil && !b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, tid) {
		return fill(func(int, int) int16 { return kerr.TransactionalIDAuthorizationFailed.Code })
	}
	var denied map[string]bool
	if clientForm && b.authz != nil {
		names := make([]string, len(topics))
		for i, t := range topics {
			names[i] = t.topic
		}
		denied = b.deniedTopics(r, authz.OpWrite, names)
	}
	var parts []txn.TopicPartition
	missing := len(denied) > 0
	for _, t := range topics {
		for _, p := range t.partitions {
			if b.partitionExists(t.topic, p) != 0 {
				missing = true
			}
			parts = append(parts, txn.TopicPartition{Topic: t.topic, Partition: p})
		}
	}
	if missing {
		return fill(func(i, j int) int16 {
			t := topics[i]
			switch {
			case denied[t.topic]:
				return kerr.TopicAuthorizationFailed.Code
			case b.partitionExists(t.topic, t.partitions[j]) != 0:
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
	}
	if verifyOnly {
		each, code := b.txns.VerifyPartitions(tid, pid, epoch, parts)
		k := 0
		return fill(func(int, int) int16 {
			if code != 0 {
				return code
			}
			k++
			return each[k-1]
		})
	}
	add := b.txns.AddPartitions
	if !clientForm {
		add = b.txns.AddPartitionsTV2 // as Kafka: v4+ adds for a transaction version 2 producer
	}
	code := fencedForVersion(add(tid, pid, epoch, parts), version, 2)
	return fill(func(int, int) int16 { return code })
}

// fencedForVersion turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for request
// versions below since (the version that introduced PRODUCER_FENCED), as Kafka does.
func fencedForVersion(code, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
