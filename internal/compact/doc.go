// Package compact owns log compaction, the cleaner of cleanup.policy=compact
// topics: the bounded key → latest-offset map (log.cleaner.dedupe.buffer.size),
// the rewrite of a log's non-active segments keeping the latest record per
// key (offsets never renumbered, survivors keep offset, timestamp, headers
// and their batch's producer id/epoch/sequence), KIP-534 tombstone delete
// horizons, transactions (aborted data removed, markers removed once their
// transaction's data is gone and their delete horizon passed, nothing at or
// above the last stable offset cleaned — txn.go), the choice of which log to clean (dirty ratio,
// min/max.compaction.lag.ms, pending tombstone horizons), the timer roll that
// lets idle partitions compact, the data-dir file cleaner-offset-checkpoint,
// retry with backoff after a failed pass, and the status report behind
// `sluice compaction status` and the compaction metrics.
//
// It reaches segments only through internal/log's cleaner seam
// (SegmentBatches, NewSegmentWriter, ReplaceSegments, Roll): the crash-safe
// segment swap and its recovery belong to the log, not here. It must not
// touch segment files directly, topic metadata, producer state (it only reads
// batch headers to find each producer's last batch, and the log's
// aborted-transaction index and last stable offset) or the network; the
// broker resolves topic configs into TopicConfig and wires the cleaner in.
// Semantics and knobs are documented in docs/compaction.md.
package compact
