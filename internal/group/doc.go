// Package group is Sluice's consumer-group coordinator.
//
// It owns: the classic group protocol state machine (Empty, PreparingRebalance,
// CompletingRebalance, Stable, Dead; member ids and MEMBER_ID_REQUIRED from KIP-394,
// generations, protocol selection, leader-side assignment handed out at SyncGroup,
// rebalance and session timeouts, static membership from KIP-345), the KIP-848
// consumer protocol (broker-side "uniform" and "range" assignors, member epochs,
// incremental revocation), committed offsets and their expiry, transactional offset
// commits (TxnOffsetCommit: pending until the producer's commit or abort marker reaches
// the group's partition, see txn_offsets.go), and the durable form of
// all of it: records in the compacted __consumer_offsets topic in Apache Kafka's own
// key/value formats (kmsg.OffsetCommitKey/Value, kmsg.GroupMetadataKey/Value, and the
// KIP-848 ConsumerGroup* records, key types 3..8, encoded in consumer_records.go),
// replayed at start-up by Start.
//
// It must not touch: sockets, request framing or the log's files. The broker hands it
// decoded kmsg requests and writes the responses it returns; durable state goes through
// the Storage interface (one append-only log per __consumer_offsets partition) and
// topic facts through the Topics interface, both implemented by the broker.
//
// Time comes from a Clock, so tests drive every timeout with a fake clock and never sleep.
// All state is guarded by one mutex: group traffic is small next to the data path, and
// a single lock keeps the state machine easy to reason about. Timer callbacks take the
// same lock and check that the state they were armed for still exists.
package group
