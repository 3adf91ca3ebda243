// ListTransactions (key 66), v0–v1.
//
// Transactions are not implemented (InitProducerId refuses transactional
// ids), so there is never a transaction to list: the answer is an empty
// list with no error, whatever the producer-id and duration (v1) filters.
// State filters that are not one of Kafka's transaction state names (Empty,
// Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
// PrepareEpochFence) are echoed in unknown_state_filters, as Apache Kafka
// does. Kafka 4.1's v2 (transactional id pattern) is not advertised.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListTransactions, (*Broker).handleListTransactions) }

// transactionStates are Kafka's transaction state names.
var transactionStates = map[string]bool{
	"Empty": true, "Ongoing": true, "PrepareCommit": true, "PrepareAbort": true,
	"CompleteCommit": true, "CompleteAbort": true, "Dead": true, "PrepareEpochFence": true,
}

func (b *Broker) handleListTransactions(_ context.Context, _ *wire.Request, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, s := range req.StateFilters {
		if !transactionStates[s] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	return resp, nil
}
