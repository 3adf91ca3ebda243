// Partition verification for transactional produce (Kafka's
// transaction.partition.verification.enable, KIP-890 part 1): a
// transactional batch may only be written to a partition its producer added
// to its ongoing transaction with AddPartitionsToTxn — or, for a
// transaction version 2 producer (Produce v12+), the broker adds it itself.
// produce.go calls beginTxnProduce for each transactional batch before
// appending it.
package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/txn"
)

// beginTxnProduce admits a transactional append of producer pid/epoch to
// topic/partition, or returns an *Error with Kafka's code: INVALID_TXN_STATE
// (partition not added, or no transaction ongoing), INVALID_PRODUCER_EPOCH,
// INVALID_PRODUCER_ID_MAPPING, or NOT_ENOUGH_REPLICAS (retriable) while the
// transaction is being completed; with
// transaction.partition.verification.enable=false it admits everything. On nil
// error the caller appends and then calls release (always, whatever the append's
// outcome). Until release the transaction's markers wait, so a batch verified
// while its transaction was ongoing cannot land after the marker that ends it
// (which would leave a transaction open on the partition that nothing ends: a
// "hanging" transaction holding the last stable offset back).
//
// On a cluster node, a transactional id coordinated by another broker is
// admitted by that broker (cluster_txn.go), which holds its markers back
// the same way until this append is done.
//
// add (Produce v12+, TxnOffsetCommit v5+: transaction version 2, KIP-890
// part 2) adds a partition missing from the transaction to it, starting the
// transaction if none is ongoing, instead of refusing the append.
func (b *Broker) beginTxnProduce(tid *string, pid int64, epoch int16, topic string, partition int32, add bool) (release func(), err error) {
	if b.txns == nil {
		return func() {}, nil
	}
	if c := b.cluster; c != nil && tid != nil && !c.coordinatesTxn(*tid) {
		return c.beginRemoteTxnProduce(*tid, pid, epoch, topic, partition, add)
	}
	tp := txn.TopicPartition{Topic: topic, Partition: partition}
	var code int16
	if add {
		release, code = b.txns.BeginProduceAdd(pid, epoch, tp)
	} else {
		release, code = b.txns.BeginProduce(pid, epoch, tp)
	}
	if code == 0 {
		return release, nil
	}
	e := kerr.ErrorForCode(code).(*kerr.Error)
	return nil, errorf(e, "transactional produce to %s-%d by producer %d (epoch %d) refused: %s", topic, partition, pid, epoch, e.Message)
}
