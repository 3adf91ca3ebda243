package txn

import "github.com/twmb/franz-go/pkg/kerr"

// VerifyPartitions answers AddPartitionsToTxn v4+ with VerifyOnly (the
// question a partition leader asks the coordinator before a transactional
// append, KIP-890 part 1), as Kafka's coordinator does: a code for the whole
// transaction (the coordinator-level errors, INVALID_PRODUCER_ID_MAPPING
// for a producer id the transactional id does not hold, PRODUCER_FENCED for
// another epoch, CONCURRENT_TRANSACTIONS while the transaction is being
// committed or aborted), else a code per partition: 0 for a partition of
// the ongoing transaction, TRANSACTION_ABORTABLE for any other. Nothing is
// changed.
func (c *Coordinator) VerifyPartitions(id string, pid int64, epoch int16, parts []TopicPartition) ([]int16, int16) {
	m, code := c.checkProducer(id, pid, epoch)
	if code != 0 {
		return nil, code
	}
	defer m.mu.Unlock()
	if m.state == PrepareCommit || m.state == PrepareAbort {
		return nil, kerr.ConcurrentTransactions.Code
	}
	codes := make([]int16, len(parts))
	for i, tp := range parts {
		if _, ok := m.partitions[tp]; !ok || m.state != Ongoing {
			codes[i] = kerr.TransactionAbortable.Code
		}
	}
	return codes, 0
}
