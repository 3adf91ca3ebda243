// Package producer owns the broker's idempotent- and transactional-producer
// state: producer id
// allocation (persisted so an id is never handed out twice, even across a
// restart), and, per partition, the sequence window of each producer — the
// metadata of its last five batches — that decides whether an incoming batch
// is new, a retried duplicate (answered with the original offsets), out of
// order (OUT_OF_ORDER_SEQUENCE_NUMBER) or from a fenced epoch
// (INVALID_PRODUCER_EPOCH). The rules follow Apache Kafka 4.x
// (ProducerStateManager / ProducerAppendInfo for client appends).
//
// A *State is the per-partition piece. It implements the partition log's
// producer-guard seam: Check is called under the log's append lock before
// offsets are assigned, Appended after the batch is written. State survives a
// restart through snapshot files named like Kafka's (%020d.snapshot, Kafka's
// version-1 layout, so Kafka's tools read them) plus a replay of the batch
// headers written after the snapshot.
//
// The package must not touch the log's segment files, the network or topic
// metadata: it reads batch headers it is handed and owns only its own files
// (the producer-id file in the data dir and *.snapshot files in partition
// directories).
//
// Transactions (txn.go), per partition, as Kafka's ProducerStateManager: a
// producer's first transactional batch opens its transaction at the batch's
// base offset; a commit or abort marker written by the coordinator ends it
// (an abort of a transaction with data becomes an entry of the log's
// aborted-transaction index). The earliest ongoing transaction's first offset
// is the partition's first unstable offset, which bounds the log's last
// stable offset (read_committed). Fencing follows Kafka: a batch or marker of
// an older producer epoch is INVALID_PRODUCER_EPOCH, a marker of an older
// coordinator epoch TRANSACTION_COORDINATOR_FENCED, a non-transactional batch
// during a transaction INVALID_TXN_STATE; a bumped epoch forgets the sequence
// window. A coordinator's own batches (log.AppendOptions.Coordinator) skip
// sequence checks. Whether a partition was added to the transaction
// (KIP-890 verification) is not checked.
package producer
