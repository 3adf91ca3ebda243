// DescribeTransactions (key 65), v0: the coordinator's state of each
// requested transactional id (txn.Coordinator.Describe): producer id and
// epoch, Kafka's state name, timeout, start time (-1 before the first
// transaction) and the partitions of the ongoing transaction, by topic.
// Unknown ids get TRANSACTIONAL_ID_NOT_FOUND (105), the empty id
// INVALID_REQUEST, as Apache Kafka answers. FindCoordinator names this node
// the coordinator of every transactional id, so admin clients
// (kafka-transactions.sh describe) send the request here.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeTransactions, (*Broker).handleDescribeTransactions) }

func (b *Broker) handleDescribeTransactions(_ context.Context, r *wire.Request, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID = id
		if !b.allowed(r, authz.OpDescribe, authz.ResourceTransactionalID, id) { // Kafka: DESCRIBE on the id
			s.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		d, code := b.txns.Describe(id)
		s.ErrorCode = code
		if code == 0 {
			s.State = d.State.String()
			s.TimeoutMillis = d.TimeoutMs
			s.StartTimestamp = d.StartMs
			s.ProducerID = d.ProducerID
			s.ProducerEpoch = d.ProducerEpoch
			for _, tp := range d.Partitions {
				if !b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, tp.Topic) {
					continue // Kafka leaves out the topics the principal may not describe
				}
				n := len(s.Topics)
				if n == 0 || s.Topics[n-1].Topic != tp.Topic {
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = tp.Topic
					s.Topics = append(s.Topics, t)
					n++
				}
				s.Topics[n-1].Partitions = append(s.Topics[n-1].Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}
