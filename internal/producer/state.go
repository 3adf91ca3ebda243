package producer

import (
	"sync"
	"sync/atomic"

	"github.com/sluice-broker/sluice/internal/batch"
)

// Duplicate describes the original append of a retried batch: the offsets
// and stored max timestamp the first append got. Found is false for a new
// batch.
type Duplicate struct {
	Found      bool
	BaseOffset int64
	LastOffset int64
	Timestamp  int64
}

// State is the idempotent-producer state of one partition. Check and
// Appended are meant to be called under the partition's append lock, in that
// order, once per batch; State has its own mutex so that snapshots,
// expiration and inspection may run from other goroutines.
//
// A produce request carries at most one batch per partition (Kafka rejects
// more from v3 on; the produce handler enforces it), so Check does not model
// several batches of the same producer inside one append: a second batch of
// the same producer in one append would be judged against the state before
// the first.
type State struct {
	// snapMu serializes writing snapshots with rebuilds, so a snapshot of
	// the state before a truncation is never written after the rebuild
	// deleted the stale ones. Order: the log's append lock, snapMu, mu.
	snapMu    sync.Mutex
	mu        sync.Mutex
	producers map[int64]*entry
	// end is one past the last offset of any batch applied: every producer
	// batch below it is reflected in the state, none at or above it. It is
	// the offset a snapshot of the current state may be named for.
	end int64
	// snapEnd is end as of the last snapshot written or loaded.
	snapEnd int64
	// ongoing maps the producers with an ongoing transaction on this
	// partition to its first offset (txn.go).
	ongoing map[int64]int64
	// firstUnstable is the smallest value of ongoing, -1 when it is empty;
	// readers load it without the mutex (the log's last stable offset).
	firstUnstable atomic.Int64
	// decided are the transactions a marker ended whose marker may not
	// be below the high watermark yet (undecided.go), in marker order;
	// nDecided is their number, read without the mutex.
	decided  []decidedTxn
	nDecided atomic.Int64
}

// NewState returns an empty partition state.
func NewState() *State {
	s := &State{producers: make(map[int64]*entry), ongoing: make(map[int64]int64)}
	s.firstUnstable.Store(-1)
	return s
}

// Check validates the header of a batch a client is producing, before the
// log assigns offsets. It does not change the state. It returns:
//   - a Duplicate with Found set when the batch repeats one of the producer's
//     last five batches (same epoch and sequence range): the caller must not
//     append it and answers with the original offsets;
//   - *Error INVALID_PRODUCER_EPOCH when the batch's epoch is older than the
//     producer's current one;
//   - *Error OUT_OF_ORDER_SEQUENCE_NUMBER when the sequence does not follow
//     the last one written (a new epoch must start at 0);
//   - *Error INVALID_RECORD for a producer id with a negative sequence.
//
// Batches without a producer id (-1) are always accepted. As in Kafka 4, a
// producer this partition has no state for (a new one, or one whose batches
// were all deleted or expired) may start at any sequence.
func (s *State) Check(h batch.Header) (Duplicate, error) {
	if h.ProducerID < 0 || h.IsControl() {
		return Duplicate{}, nil
	}
	if h.BaseSequence < 0 {
		return Duplicate{}, errorf(CodeInvalidRecord,
			"invalid sequence number %d in record batch with producer id %d", h.BaseSequence, h.ProducerID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.producers[h.ProducerID]
	if e == nil {
		return Duplicate{}, nil // unknown producer: any epoch, any sequence
	}
	lastSeq := incrementSequence(h.BaseSequence, h.LastOffsetDelta)
	if m, ok := e.findDuplicate(h.ProducerEpoch, h.BaseSequence, lastSeq); ok {
		return Duplicate{Found: true, BaseOffset: m.firstOffset, LastOffset: m.lastOffset, Timestamp: m.timestamp}, nil
	}
	if h.ProducerEpoch < e.epoch {
		return Duplicate{}, errorf(CodeInvalidProducerEpoch,
			"epoch %d of producer %d is older than its current epoch %d", h.ProducerEpoch, h.ProducerID, e.epoch)
	}
	if h.ProducerEpoch != e.epoch {
		if h.BaseSequence != 0 && e.epoch != noEpoch {
			return Duplicate{}, errorf(CodeOutOfOrderSequence,
				"producer %d starts new epoch %d at sequence %d, expected 0 (current epoch %d)",
				h.ProducerID, h.ProducerEpoch, h.BaseSequence, e.epoch)
		}
		return Duplicate{}, e.checkTxnState(h)
	}
	if e.epoch == noEpoch {
		return Duplicate{}, e.checkTxnState(h)
	}
	if cur := e.lastSeq(); !inSequence(cur, h.BaseSequence) {
		return Duplicate{}, errorf(CodeOutOfOrderSequence,
			"out of order sequence number for producer %d: %d (incoming), %d (last written)",
			h.ProducerID, h.BaseSequence, cur)
	}
	return Duplicate{}, e.checkTxnState(h)
}

// Appended records a batch the log has just written at baseOffset. h is the
// header as stored (its MaxTimestamp is remembered for duplicate answers).
// It is also how state is rebuilt from the log on open (see Replay), and how
// a follower learns the leader's batches, which were never Checked here:
// it accepts any header.
func (s *State) Appended(h batch.Header, baseOffset int64) {
	if h.ProducerID < 0 || h.IsControl() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLocked(h, baseOffset)
}

func (s *State) appendLocked(h batch.Header, baseOffset int64) {
	s.end = max(s.end, baseOffset+int64(h.LastOffsetDelta)+1)
	e := s.producers[h.ProducerID]
	if e == nil {
		e = newEntry()
		s.producers[h.ProducerID] = e
	}
	if h.BaseSequence < 0 {
		// A coordinator's batch (transactional offset commits) carries no
		// sequence: it moves the epoch but has no place in the window.
		e.setEpoch(h.ProducerEpoch)
		e.lastTimestamp = h.MaxTimestamp
	} else {
		e.add(h.ProducerEpoch, batchMeta{
			firstSeq:    h.BaseSequence,
			lastSeq:     incrementSequence(h.BaseSequence, h.LastOffsetDelta),
			firstOffset: baseOffset,
			lastOffset:  baseOffset + int64(h.LastOffsetDelta),
			timestamp:   h.MaxTimestamp,
		})
	}
	if h.IsTransactional() && e.txnFirst < 0 {
		s.beginTxnLocked(h.ProducerID, e, baseOffset)
	}
}

// Replay applies a batch read back from the log (its BaseOffset is the
// stored one), without validation — used to rebuild state on open.
func (s *State) Replay(h batch.Header) { s.Appended(h, h.BaseOffset) }

// Len is the number of producers with state on this partition.
func (s *State) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.producers)
}

// Clear forgets every producer (before a rebuild, e.g. after the log was
// truncated to an earlier offset).
func (s *State) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.producers)
	clear(s.ongoing)
	s.firstUnstable.Store(-1)
	s.decided = nil
	s.nDecided.Store(0)
	s.end, s.snapEnd = 0, 0
}

// TruncateHead forgets producers whose last batch lies wholly before
// logStartOffset (their records were deleted by retention or DeleteRecords):
// such a producer may then continue with any sequence. A producer with an
// ongoing transaction is kept whatever the log start, as Kafka keeps it:
// its transaction stays open (the last stable offset is held at the log
// start) until its marker, which must still find it — a coordinator's
// batches have no place in the window, so "no batch remembered" does not
// mean "no data left".
func (s *State) TruncateHead(logStartOffset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.producers {
		if e.txnFirst >= 0 {
			continue
		}
		if e.empty() || e.last().lastOffset < logStartOffset {
			s.removeLocked(id)
		}
	}
}

// Expire forgets producers whose last batch's timestamp is expirationMs or
// more before nowMs (producer.id.expiration.ms, default one day), except
// those with an ongoing transaction (as Kafka). It returns how many were
// removed.
func (s *State) Expire(nowMs, expirationMs int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, e := range s.producers {
		if e.txnFirst < 0 && nowMs-e.lastTimestamp >= expirationMs {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// ProducerInfo describes one producer's state (DescribeProducers, tests).
type ProducerInfo struct {
	ProducerID    int64
	Epoch         int16
	LastSequence  int32
	LastOffset    int64 // -1 when no batch is remembered
	LastTimestamp int64
	// CoordinatorEpoch is the coordinator epoch of the last transaction
	// marker seen, -1 if none.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the producer's ongoing
	// transaction on this partition, -1 when none.
	CurrentTxnStartOffset int64
}

// Producers returns every producer's state, in no particular order.
func (s *State) Producers() []ProducerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProducerInfo, 0, len(s.producers))
	for id, e := range s.producers {
		pi := ProducerInfo{ProducerID: id, Epoch: e.epoch, LastSequence: e.lastSeq(), LastOffset: -1,
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.txnFirst}
		if !e.empty() {
			pi.LastOffset = e.last().lastOffset
		}
		out = append(out, pi)
	}
	return out
}
