// EndTxn (key 26), v0–v5: a transactional producer commits or aborts its
// transaction. The coordinator records the decision (PrepareCommit or
// PrepareAbort) in __transaction_state, writes a commit or abort marker to
// every partition of the transaction (for __consumer_offsets partitions,
// through the group coordinator, which then applies or drops the pending
// transactional offsets), records the completion and answers
// (txn.Coordinator.EndTxn). v5 is transaction version 2 (KIP-890 part 2,
// txn.Coordinator.EndTxnV2): the producer epoch is bumped by every commit
// and abort (the markers carry the bumped epoch), the answer carries the
// producer id and epoch to continue with (a new producer id at epoch 0 when
// the epoch ran out), a retry at the previous epoch gets the same answer,
// and an abort with nothing added succeeds. As in Kafka, the request
// version decides, whatever transaction.version is finalized (clients send
// v5 only when it is 2).
//
// Differs from Kafka: the markers are written before the answer rather than
// after it, so a read_committed consumer sees the outcome as soon as EndTxn
// returns. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH below v2, as
// Kafka does.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.EndTxn, (*Broker).handleEndTxn) }

func (b *Broker) handleEndTxn(_ context.Context, r *wire.Request, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if req.Version >= 5 { // transaction version 2: the epoch is bumped, the answer carries it
		pid, epoch, code := b.txns.EndTxnV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = code
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		return resp, nil
	}
	resp.ErrorCode = fencedForVersion(b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit), req.Version, 2)
	return resp, nil
}
