package producer

import (
	"math"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// Transactions on one partition, as Kafka's ProducerStateManager and
// ProducerAppendInfo track them: a producer's first transactional batch
// opens its transaction at the batch's base offset; a transaction marker
// (commit or abort, written by the coordinator) ends it. The first offset
// of the earliest ongoing transaction bounds the last stable offset.

// checkTxnState is Kafka's rule that a producer with an ongoing transaction
// may only write transactional batches (INVALID_TXN_STATE).
func (e *entry) checkTxnState(h batch.Header) error {
	if e.txnFirst >= 0 && !h.IsTransactional() {
		return errorf(CodeInvalidTxnState,
			"non-transactional batch from producer %d while its transaction begun at offset %d is ongoing",
			h.ProducerID, e.txnFirst)
	}
	return nil
}

func (s *State) beginTxnLocked(id int64, e *entry, firstOffset int64) {
	e.txnFirst = firstOffset
	s.ongoing[id] = firstOffset
	s.recomputeLocked()
}

func (s *State) endTxnLocked(id int64, e *entry) {
	e.txnFirst = -1
	if _, ok := s.ongoing[id]; ok {
		delete(s.ongoing, id)
		s.recomputeLocked()
	}
}

// removeLocked forgets a producer, with its ongoing transaction if any.
func (s *State) removeLocked(id int64) {
	if e := s.producers[id]; e != nil && e.txnFirst >= 0 {
		s.endTxnLocked(id, e)
	}
	delete(s.producers, id)
}

func (s *State) recomputeLocked() {
	first := int64(-1)
	for _, off := range s.ongoing {
		if first < 0 || off < first {
			first = off
		}
	}
	s.firstUnstable.Store(first)
}

// FirstUnstableOffset is the first offset of the earliest ongoing
// transaction on the partition, -1 when none is ongoing. It takes no lock.
func (s *State) FirstUnstableOffset() int64 { return s.firstUnstable.Load() }

// OngoingTxns returns the producers with an ongoing transaction and the
// first offset of each.
func (s *State) OngoingTxns() map[int64]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]int64, len(s.ongoing))
	for id, off := range s.ongoing {
		out[id] = off
	}
	return out
}

// CheckCoordinator validates a data batch a transaction coordinator writes
// (transactional offset commits): as Kafka does for that origin, only the
// epoch (INVALID_PRODUCER_EPOCH) and the transaction state
// (INVALID_TXN_STATE) are checked, not sequences.
func (s *State) CheckCoordinator(h batch.Header) error {
	if h.ProducerID < 0 || h.IsControl() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.producers[h.ProducerID]
	if e == nil {
		return nil
	}
	if h.ProducerEpoch < e.epoch {
		return errorf(CodeInvalidProducerEpoch,
			"epoch %d of producer %d is older than its current epoch %d", h.ProducerEpoch, h.ProducerID, e.epoch)
	}
	return e.checkTxnState(h)
}

// CheckMarker validates a transaction marker before it is written: a marker
// whose producer epoch is older than the producer's current one is
// INVALID_PRODUCER_EPOCH (for a transaction version 2 marker, one not newer
// than it, unless it repeats a marker already written), one whose coordinator epoch is older than the
// last marker's is TRANSACTION_COORDINATOR_FENCED (Kafka's rules). A marker
// for a producer without an ongoing transaction here is fine.
func (s *State) CheckMarker(m batch.Marker) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.producers[m.ProducerID]
	if e == nil {
		return nil
	}
	if m.TransactionVersion >= 2 {
		// The coordinator bumped the epoch when it prepared the transaction:
		// the marker's must be newer than the batches', unless the marker is
		// a retry of one already written (no transaction ongoing any more).
		retry := m.ProducerEpoch == e.epoch && (e.txnFirst < 0 || m.ProducerEpoch == math.MaxInt16)
		if m.ProducerEpoch <= e.epoch && !retry {
			return errorf(CodeInvalidProducerEpoch,
				"transaction marker epoch %d of producer %d is not newer than its current epoch %d (transaction version %d)",
				m.ProducerEpoch, m.ProducerID, e.epoch, m.TransactionVersion)
		}
	} else if m.ProducerEpoch < e.epoch {
		return errorf(CodeInvalidProducerEpoch,
			"transaction marker epoch %d of producer %d is older than its current epoch %d", m.ProducerEpoch, m.ProducerID, e.epoch)
	}
	if e.coordinatorEpoch > m.CoordinatorEpoch {
		return errorf(CodeCoordinatorFenced,
			"transaction marker of producer %d has coordinator epoch %d, older than %d", m.ProducerID, m.CoordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// PendingCompletion reports what a marker about to be written at offset
// would end, without changing the state: the producer's ongoing
// transaction (ok=false when it has none: an empty transaction leaves no
// trace in the aborted-transaction index) and the last stable offset to
// record with it in that index — the first offset of the earliest other
// ongoing transaction, or offset+1 when there is none (Kafka's
// ProducerStateManager.lastStableOffset(CompletedTxn)).
func (s *State) PendingCompletion(m batch.Marker, offset int64) (txn log.CompletedTxn, lso int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingLocked(m, offset)
}

func (s *State) pendingLocked(m batch.Marker, offset int64) (txn log.CompletedTxn, lso int64, ok bool) {
	e := s.producers[m.ProducerID]
	if e == nil || e.txnFirst < 0 {
		return log.CompletedTxn{}, 0, false
	}
	lso = offset + 1
	for id, off := range s.ongoing {
		if id != m.ProducerID && off < lso {
			lso = off
		}
	}
	return log.CompletedTxn{ProducerID: m.ProducerID, FirstOffset: e.txnFirst, LastOffset: offset,
		Aborted: m.Type == batch.ControlAbort}, lso, true
}

// MarkerAppended applies a marker written at offset: the producer's ongoing
// transaction ends, its epoch moves to the marker's (a bumped epoch forgets
// the sequence window, so the next batch starts at sequence 0), and the
// coordinator epoch and timestamp are remembered. A producer unknown here
// is created, so a later batch of an older epoch is fenced.
func (s *State) MarkerAppended(m batch.Marker, offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markerLocked(m, offset)
}

func (s *State) markerLocked(m batch.Marker, offset int64) {
	s.end = max(s.end, offset+1)
	e := s.producers[m.ProducerID]
	if e == nil {
		e = newEntry()
		s.producers[m.ProducerID] = e
	}
	e.setEpoch(m.ProducerEpoch)
	e.coordinatorEpoch = m.CoordinatorEpoch
	e.lastTimestamp = m.Timestamp
	if e.txnFirst >= 0 {
		s.addDecidedLocked(e.txnFirst, offset)
	}
	s.endTxnLocked(m.ProducerID, e)
}

// ReplayMarker applies a marker read back from the log at offset (rebuild)
// and returns the transaction it ended, with the last stable offset to
// record for it, as PendingCompletion would have.
func (s *State) ReplayMarker(m batch.Marker, offset int64) (txn log.CompletedTxn, lso int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	txn, lso, ok = s.pendingLocked(m, offset)
	s.markerLocked(m, offset)
	return txn, lso, ok
}
