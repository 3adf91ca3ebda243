// ListTransactions (key 66), v0–v2: the transactional ids this coordinator
// knows (txn.Coordinator.List), filtered by state names, producer ids and
// (v1) a minimum running time, sorted by id. State filters that are not one
// of Kafka's transaction state names (Empty, Ongoing, PrepareCommit,
// PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence) are
// echoed in unknown_state_filters, as Apache Kafka does (a request whose
// state filters are all unknown matches nothing). v2 (KIP-1152): a
// TransactionalIdPattern (null or empty: none) keeps the ids it matches
// in full, RE2 syntax as Kafka's RE2J; an invalid pattern is
// INVALID_REGULAR_EXPRESSION.

package broker

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListTransactions, (*Broker).handleListTransactions) }

func (b *Broker) handleListTransactions(_ context.Context, r *wire.Request, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.Filter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, name := range req.StateFilters {
		if s, ok := txn.ParseState(name); ok {
			f.States = append(f.States, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		return resp, nil // every filter unknown: nothing matches, as in Kafka
	}
	var pattern *regexp.Regexp // v2 (KIP-1152): a full match of the id, RE2 syntax as Kafka's RE2J
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(`^(?:` + *req.TransactionalIDPattern + `)$`); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
	}
	list, code := b.txns.List(f)
	resp.ErrorCode = code
	for _, l := range list {
		if pattern != nil && !pattern.MatchString(l.TransactionalID) {
			continue
		}
		if !b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTransactionalID, l.TransactionalID) {
			continue // Kafka lists the ids the principal may describe
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID = l.TransactionalID
		s.ProducerID = l.ProducerID
		s.TransactionState = l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}
