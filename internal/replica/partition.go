// Package replica is the partition layer between the broker's handlers and the
// partition logs. A Partition knows this broker's role for it (leader,
// follower, none), the leader epoch, the replicas and the in-sync set the
// metadata gave it, and a high watermark kept apart from the log end offset;
// it answers NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and
// UNKNOWN_LEADER_EPOCH as Kafka's Partition does. The Manager holds every
// local Partition and turns assignment changes into events (became leader,
// became follower, removed) that the coordinators of internal topics load and
// unload their partitions on.
//
// It owns: roles, epochs, the high watermark's rule, leader-side checks of a
// produce (min.insync.replicas) and the events. It must not touch: topic
// metadata (names, ids, configs), the wire protocol, or how a log stores its
// data (internal/log).
package replica

import (
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// Role is this broker's part in a partition.
type Role uint8

const (
	// None: this broker holds the log but is not a replica the metadata
	// names (or the partition has no leader here to follow).
	None Role = iota
	// Leader: this broker leads the partition and serves produce and fetch.
	Leader
	// Follower: this broker replicates the partition from its leader.
	Follower
)

func (r Role) String() string {
	switch r {
	case Leader:
		return "leader"
	case Follower:
		return "follower"
	}
	return "none"
}

// NoLeader is State.Leader of a partition without a leader (offline).
const NoLeader int32 = -1

// State is what the metadata says about one partition. A State handed to
// or returned by this package is never modified.
type State struct {
	Leader         int32 // the leader's node id, NoLeader when offline
	LeaderEpoch    int32
	PartitionEpoch int32 // bumped on every change (Kafka's partition epoch)
	Replicas       []int32
	ISR            []int32
	// MinISR: while the in-sync set is smaller, the leader's high
	// watermark does not advance (KIP-966's rule, with eligible leader
	// replicas: min(min.insync.replicas, replication factor)); 0: no
	// such rule.
	MinISR int
}

// Partition is one local partition: its log and this broker's role for it.
// Safe for concurrent use; the state is replaced atomically, never mutated.
type Partition struct {
	topic string
	index int32
	self  int32
	log   *log.Log
	st    atomic.Pointer[State]
	lv    leaderView  // replication state while this broker leads (replication.go)
	lease *leaseCheck // nil: no lease (lease.go)
	stats statsSlot   // the topic's traffic counters, cached (stats.go)
}

// Topic is the partition's topic.
func (p *Partition) Topic() string { return p.topic }

// Index is the partition's number within its topic.
func (p *Partition) Index() int32 { return p.index }

// State returns the partition's current state.
func (p *Partition) State() State { return *p.st.Load() }

// Role is this broker's role under the current state.
func (p *Partition) Role() Role { return roleOf(p.self, p.st.Load()) }

func roleOf(self int32, st *State) Role {
	switch {
	case st.Leader == self:
		return Leader
	case slices.Contains(st.Replicas, self):
		return Follower
	}
	return None
}

// LeaderEpoch is the current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.st.Load().LeaderEpoch }

// CheckLeader is Kafka's check of a request that must reach the leader:
// currentEpoch is the client's current_leader_epoch (-1: don't check). A
// newer epoch than ours is UNKNOWN_LEADER_EPOCH (our metadata is behind), an
// older one FENCED_LEADER_EPOCH (the client's is), and a broker that does
// not lead is NOT_LEADER_OR_FOLLOWER. 0 means the request may proceed.
func (p *Partition) CheckLeader(currentEpoch int32) int16 {
	st := p.st.Load()
	if c := checkEpoch(st.LeaderEpoch, currentEpoch); c != 0 {
		return c
	}
	if st.Leader != p.self || p.leaseLapsed(st) {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

func checkEpoch(ours, theirs int32) int16 {
	switch {
	case theirs < 0 || theirs == ours:
		return 0
	case theirs > ours:
		return kerr.UnknownLeaderEpoch.Code
	}
	return kerr.FencedLeaderEpoch.Code
}

// AppendAsLeader appends a produce's (or a coordinator's) batches with the
// current leader epoch, after checking that this broker leads and, for
// acks=all (requireISR > 0), that the in-sync set has at least requireISR
// members (min.insync.replicas; NOT_ENOUGH_REPLICAS otherwise, before
// anything is written, as in Kafka). opts.LeaderEpoch is overwritten.
func (p *Partition) AppendAsLeader(records []byte, opts log.AppendOptions, requireISR int) (log.AppendResult, error) {
	st := p.st.Load()
	if st.Leader != p.self {
		return log.AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1},
			&Error{Code: kerr.NotLeaderForPartition.Code, Msg: "this broker is not the leader of " + p.String()}
	}
	if p.leaseLapsed(st) {
		return log.AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1},
			&Error{Code: kerr.NotLeaderForPartition.Code, Msg: "this broker has lost its session with the controller and no longer acts as leader of " + p.String()}
	}
	if requireISR > 0 && len(st.ISR) < requireISR {
		return log.AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: p.log.LogStartOffset()},
			&Error{Code: kerr.NotEnoughReplicas.Code, Msg: notEnoughReplicas(p, len(st.ISR), requireISR)}
	}
	opts.LeaderEpoch = st.LeaderEpoch
	if !p.lv.startSet.Load() {
		p.noteEpochStart(st)
	}
	return p.log.Append(records, opts)
}

// HighWatermark is the offset below which records are on every in-sync
// replica: what consumers may read.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// LogEndOffset is the offset the next appended record gets.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// LogStartOffset is the first offset a reader may ask for.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// LastStableOffset bounds what read_committed consumers see.
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset() }

// Read returns whole batches from offset up to the high watermark
// (committed: the last stable offset); see log.Log.Read.
func (p *Partition) Read(offset int64, maxBytes int, minOneBatch, committed bool) (log.ReadResult, error) {
	if committed {
		return p.log.ReadCommitted(offset, maxBytes, minOneBatch)
	}
	return p.log.Read(offset, maxBytes, minOneBatch)
}

// AbortedTxns lists the aborted transactions a read_committed fetch of
// [fetchOffset, upperBound) reports.
func (p *Partition) AbortedTxns(fetchOffset, upperBound int64) []log.AbortedTxn {
	return p.log.AbortedTxns(fetchOffset, upperBound)
}

// AllAbortedTxns lists every aborted transaction the log knows.
func (p *Partition) AllAbortedTxns() []log.AbortedTxn { return p.log.AllAbortedTxns() }

// ReadBytes returns whole batches from offset (coordinators replaying their
// internal partitions); see log.Log.ReadBytes.
func (p *Partition) ReadBytes(offset int64, maxBytes int) ([]byte, error) {
	return p.log.ReadBytes(offset, maxBytes)
}

// Wait returns a channel closed when the log or its high watermark changes.
func (p *Partition) Wait() <-chan struct{} { return p.log.Wait() }

// WaitDurable waits until everything below offset is fsynced.
func (p *Partition) WaitDurable(offset int64) error { return p.log.WaitDurable(offset) }

// OffsetForTimestamp finds the first record at or after ts.
func (p *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool) {
	return p.log.OffsetForTimestamp(ts)
}

// MaxTimestamp finds the record with the largest timestamp.
func (p *Partition) MaxTimestamp() (offset, timestamp int64, ok bool) { return p.log.MaxTimestamp() }

// EndOffsetForLeaderEpoch answers OffsetForLeaderEpoch for epoch: the
// largest epoch ≤ epoch this log has and the offset where it ended (the
// log end offset for the current leader's epoch), as KIP-101/KIP-279.
func (p *Partition) EndOffsetForLeaderEpoch(epoch int32) (int32, int64) {
	if st := p.st.Load(); epoch == st.LeaderEpoch && st.Leader == p.self {
		return epoch, p.log.LogEndOffset()
	}
	return p.log.EndOffsetForLeaderEpoch(epoch)
}

// DeleteRecords moves the log start offset to offset (-1: the high
// watermark) on the leader; an offset above the high watermark is
// OFFSET_OUT_OF_RANGE, as in Kafka. It returns the new log start offset.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	if p.st.Load().Leader != p.self {
		return -1, &Error{Code: kerr.NotLeaderForPartition.Code, Msg: "this broker is not the leader of " + p.String()}
	}
	hw := p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, &Error{Code: kerr.OffsetOutOfRange.Code, Msg: deleteOutOfRange(p, offset, hw)}
	}
	if err := p.log.TruncatePrefix(offset); err != nil {
		return -1, err
	}
	return p.log.LogStartOffset(), nil
}

// Size is the log's size in bytes.
func (p *Partition) Size() int64 { return p.log.Size() }

// Config is the log's current config.
func (p *Partition) Config() log.Config { return p.log.Config() }

// String is "topic-partition".
func (p *Partition) String() string { return p.topic + "-" + itoa(p.index) }
