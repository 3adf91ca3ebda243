// TxnOffsetCommit (key 28), v0–v4: a transactional producer commits a
// group's offsets as part of its transaction (sendOffsetsToTransaction).
// The coordinator first checks that the group's __consumer_offsets partition
// was added to the producer's ongoing transaction (AddOffsetsToTxn; as
// Kafka's transaction verification does: INVALID_PRODUCER_ID_MAPPING,
// INVALID_PRODUCER_EPOCH for a fenced producer, CONCURRENT_TRANSACTIONS while
// it completes, INVALID_TXN_STATE when not added), then validates the group
// and member as Kafka does for transactional commits (v3+ carries the member
// and generation), and writes the offsets to __consumer_offsets as a
// transactional batch of the producer. They take effect when EndTxn's commit
// marker reaches that partition and are dropped on abort; meanwhile OffsetFetch
// with require_stable answers UNSTABLE_OFFSET_COMMIT for them.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.TxnOffsetCommit, (*Broker).handleTxnOffsetCommit) }

func (b *Broker) handleTxnOffsetCommit(_ context.Context, _ *wire.Request, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	verify := func() int16 {
		tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, b.groups.Partitions())}
		code := b.txns.Verify(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp)
		if code == kerr.ProducerFenced.Code {
			code = kerr.InvalidProducerEpoch.Code
		}
		return code
	}
	return b.groups.TxnOffsetCommit(req, verify), nil
}
