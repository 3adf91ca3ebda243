// EndTxn (key 26), v0–v4: a transactional producer commits or aborts its
// transaction. The coordinator records the decision (PrepareCommit or
// PrepareAbort) in __transaction_state, writes a commit or abort marker to
// every partition of the transaction (for __consumer_offsets partitions,
// through the group coordinator, which then applies or drops the pending
// transactional offsets), records the completion and answers
// (txn.Coordinator.EndTxn).
//
// Differs from Kafka: the markers are written before the answer rather than
// after it, so a read_committed consumer sees the outcome as soon as EndTxn
// returns. v5 (KIP-890 part 2: an epoch bump on every EndTxn, under
// transaction.version 2) is not advertised, and the transaction.version
// feature is not reported, so clients use the classic protocol.
// PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH below v2, as Kafka does.
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
	resp.ErrorCode = fencedForVersion(b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit), req.Version, 2)
	return resp, nil
}
