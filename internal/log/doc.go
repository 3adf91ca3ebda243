// Package log owns a partition's log, Sluice's storage engine: the segment
// files of one <topic>-<partition> directory (.log, .index, .timeindex, in
// Apache Kafka's on-disk format), appending validated v2 RecordBatches with
// offsets assigned by rewriting their headers (re-encoding them first when
// compression.type names a codec, recompress.go), the follower's append of
// batches exactly as the leader wrote them (AppendAsFollower,
// append_follower.go), reads returned as file ranges, rolling, retention,
// flushing with group commit, suffix and prefix truncation, the
// aborted-transaction index (.txnindex, txnindex.go) and the last stable
// offset (from the producer guard's first unstable offset, TxnGuard), the
// leader-epoch cache, crash recovery, and the data-dir-level
// checkpoint files (recovery points, log start offsets, clean-shutdown
// marker). Manager owns one data directory and runs the housekeeping.
// Packages storing their own checkpoints in a data dir (compact) use its
// Parse/FormatPartitionOffsets rather than their own copies.
//
// It reaches the disk only through the FS seam (internal/vfs), so tests can
// swap in vfs.MemFS, which simulates crashes, torn writes, flipped bytes and a
// full disk, or vfs.Faulty, which fails chosen operations.
//
// It must not touch: topic metadata (names, ids, configs — the broker resolves
// configs into a Config), producer state (internal/producer plugs in through
// ProducerGuard and TxnGuard), the record format itself (internal/batch), or the network.
// The on-disk format is documented in docs/storage.md.
package log
