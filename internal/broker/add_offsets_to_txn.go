// AddOffsetsToTxn (key 25), v0–v4: a transactional producer about to send
// a group's offsets (sendOffsetsToTransaction) adds that group's
// __consumer_offsets partition to its transaction, so that EndTxn writes the
// marker that makes the offsets committed (or discards them). The answer is
// the coordinator's (txn.Coordinator.AddPartitions); an empty group id is
// INVALID_GROUP_ID. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH below
// v2, as Kafka does. TRANSACTION_ABORTABLE (v4, KIP-890) is never sent.
// Under transaction version 2 clients send none: TxnOffsetCommit v5 adds the
// partition itself.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AddOffsetsToTxn, (*Broker).handleAddOffsetsToTxn) }

func (b *Broker) handleAddOffsetsToTxn(_ context.Context, r *wire.Request, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// Authorization as Kafka: WRITE on the transactional id, READ on the group.
	if !b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if !b.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, b.groups.Partitions())}
	resp.ErrorCode = fencedForVersion(b.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}), req.Version, 2)
	return resp, nil
}
