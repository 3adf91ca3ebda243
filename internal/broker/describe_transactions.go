// DescribeTransactions (key 65), v0.
//
// Transactions are not implemented (InitProducerId refuses transactional
// ids), so no transactional id is ever known: each requested id gets
// TRANSACTIONAL_ID_NOT_FOUND (105), and the empty id INVALID_REQUEST, as
// Apache Kafka's transaction coordinator answers ids it has no state for.
// FindCoordinator names this node the coordinator of every transactional id,
// so admin clients send the request here.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeTransactions, (*Broker).handleDescribeTransactions) }

func (b *Broker) handleDescribeTransactions(_ context.Context, _ *wire.Request, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID = id
		if id == "" {
			s.ErrorCode = kerr.InvalidRequest.Code
		} else {
			s.ErrorCode = kerr.TransactionalIDNotFound.Code
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}
