package log

import (
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// TopicPartition names one partition's directory, <topic>-<partition>.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// AppendOptions are the per-call inputs of Append.
type AppendOptions struct {
	// LeaderEpoch is written into every batch's partitionLeaderEpoch and
	// recorded in the leader-epoch cache.
	LeaderEpoch int32
	// Now is the append time (LogAppendTime, timestamp checks, segment.ms);
	// zero means the manager's clock.
	Now time.Time
	// AllowControl lets control batches (transaction markers) through; a
	// client's produce must not carry them (INVALID_RECORD). Each control
	// batch must be a transaction marker (batch.ParseMarker); with a
	// TxnGuard it ends its producer's transaction on this partition.
	AllowControl bool
	// DeferSync: when flush.messages asks for an fsync, Append does not wait
	// for it but reports the offset in AppendResult.SyncOffset; the caller
	// must call WaitDurable(SyncOffset) before acknowledging. A produce then
	// need not hold its connection while the disk syncs, and the next
	// request's records share the fsync (group commit across requests).
	DeferSync bool
	// Coordinator marks a batch written by a transaction coordinator rather
	// than a client (transactional offset commits): sequences are not
	// checked, base sequence -1 is accepted for a data batch with a
	// producer id, and a transactional batch still opens its producer's
	// transaction (Kafka's AppendOrigin.COORDINATOR). Coordinator input is
	// trusted: it is validated as batches read back from a log are.
	Coordinator bool
	// MarkerTransactionVersion is the transaction version of the
	// transactions the markers end (WriteTxnMarkers v2, KIP-1228; not in
	// the batch): from 2 the TxnGuard's epoch check is strict.
	MarkerTransactionVersion int8
}

// AppendResult is what a produce gets back.
type AppendResult struct {
	BaseOffset     int64 // offset of the first record appended
	LastOffset     int64 // offset of the last record appended
	LogAppendTime  int64 // ms; -1 unless message.timestamp.type=LogAppendTime
	LogStartOffset int64
	// SyncOffset is set (> 0) by an Append with DeferSync whose records
	// are not durable yet: WaitDurable(SyncOffset) makes them so.
	SyncOffset int64
	// Duplicate is set when the ProducerGuard recognised an idempotent retry:
	// nothing was appended and the offsets are the original ones.
	Duplicate bool
}

// FollowerAppendOptions are the per-call inputs of AppendAsFollower.
type FollowerAppendOptions struct {
	// Now is the append time (segment.ms); zero means the manager's clock.
	Now time.Time
	// DeferSync is AppendOptions.DeferSync: when flush.messages asks for
	// an fsync, AppendAsFollower reports the offset in
	// FollowerAppendResult.SyncOffset instead of waiting for it.
	DeferSync bool
}

// FollowerAppendResult is what AppendAsFollower did.
type FollowerAppendResult struct {
	FirstOffset    int64 // base offset of the first batch appended
	LastOffset     int64 // last offset of the last batch; the log end offset is now LastOffset+1
	LogStartOffset int64
	// SyncOffset is set (> 0) by an append with DeferSync whose records
	// are not durable yet: WaitDurable(SyncOffset) makes them so.
	SyncOffset int64
}

// FileRange is a byte range of a segment file holding whole batches. The
// file stays readable at least file.delete.delay.ms after its segment is
// deleted (see Read). File is normally a *vfs.CachedFile: ReadAt works at
// any time (the descriptor is reopened if it was evicted); for sendfile,
// pin it (vfs.Pinner), which with vfs.OS() gives an *os.File.
type FileRange struct {
	File vfs.File
	Pos  int64
	Size int64
}

// ReadResult is what Read returns.
type ReadResult struct {
	Ranges        []FileRange // in offset order, each holding whole batches
	Size          int64       // sum of the ranges' sizes
	HighWatermark int64
	// LastStableOffset is the log's last stable offset at the read (the
	// high watermark when no transaction is ongoing).
	LastStableOffset int64
	LogStartOffset   int64
	LogEndOffset     int64
	// NextOffset is one past the last offset of the data returned (the
	// requested offset when none): the upper bound for AbortedTxns.
	NextOffset int64
}

// SegmentInfo describes one segment (Log.Segments).
type SegmentInfo struct {
	BaseOffset       int64
	NextOffset       int64     // one past the last offset stored
	Size             int64     // bytes of the .log file
	Created          time.Time // when this process created or opened it
	LargestTimestamp int64     // ms, -1 if no batch carries a timestamp
	Active           bool
}

// BatchPosition locates a batch: the base offset of its segment and its byte
// position in the segment's .log file.
type BatchPosition struct {
	Segment int64
	Pos     int64
}

// ProducerGuard is the idempotence seam, implemented by internal/producer.
// Both methods run under the log's append lock, in append order.
//
// A follower's batches (AppendAsFollower) are never Checked: the leader
// judged them, and the follower only learns of them through Appended (and
// TxnGuard's PendingCompletion and MarkerAppended for markers), as Kafka's
// producer state does for AppendOrigin.REPLICATION. Appended must therefore
// accept any header the leader wrote, so that the guard is up to date when
// this replica becomes leader (a producer's retry is then recognised, its
// transaction still open).
type ProducerGuard interface {
	// Check runs for every batch with a producer id (>= 0) before offsets are
	// assigned; h.BaseOffset is still the client's. It returns dup=true with
	// the original offsets for a retried batch (the whole append then
	// answers Duplicate and stores nothing), or an error (for example an
	// *AppendError with INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER)
	// that fails the whole append.
	Check(h batch.Header) (dup bool, baseOffset, lastOffset int64, err error)
	// Appended runs for every batch with a producer id after it was written;
	// h carries the assigned offsets (a follower's: the leader's). It
	// cannot refuse anything.
	Appended(h batch.Header)
}

// ProducerGuardTruncator is optionally implemented by a ProducerGuard that
// must rebuild its state when the log loses a suffix (TruncateTo) or a
// prefix (TruncatePrefix, retention).
type ProducerGuardTruncator interface {
	Truncated(logStartOffset, logEndOffset int64)
}

// CompletedTxn is a transaction a marker ends on this partition: its
// producer, the offsets of its first batch and of the marker, and whether
// it was aborted.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// TxnGuard is optionally implemented by a ProducerGuard that tracks
// transactions (internal/producer's does). Its methods run under the
// append lock, except FirstUnstableOffset, which readers call lock-free.
type TxnGuard interface {
	// CheckCoordinator replaces Check for data batches of a Coordinator
	// append (no sequence checks).
	CheckCoordinator(h batch.Header) error
	// CheckMarker validates a transaction marker before it is written
	// (INVALID_PRODUCER_EPOCH for an older epoch); an error fails the
	// whole append.
	CheckMarker(m batch.Marker) error
	// PendingCompletion reports, without changing state, the transaction
	// the marker about to be written at offset ends (ok=false if the
	// producer has none here) and the last stable offset to record with it.
	PendingCompletion(m batch.Marker, offset int64) (txn CompletedTxn, lso int64, ok bool)
	// MarkerAppended applies a marker written at offset.
	MarkerAppended(m batch.Marker, offset int64)
	// FirstUnstableOffset is the first offset of the earliest ongoing
	// transaction, -1 if none.
	FirstUnstableOffset() int64
}

// UndecidedTxnGuard is optionally implemented by a TxnGuard that also
// remembers the transactions whose marker is written but maybe not
// replicated (internal/producer's does).
type UndecidedTxnGuard interface {
	// FirstUndecidedOffset is the first offset of the earliest transaction
	// that is ongoing or whose marker is at or above hw, -1 if none. Readers
	// call it without the append lock.
	FirstUndecidedOffset(hw int64) int64
}

type noopGuard struct{}

func (noopGuard) Check(batch.Header) (bool, int64, int64, error) { return false, 0, 0, nil }
func (noopGuard) Appended(batch.Header)                          {}
