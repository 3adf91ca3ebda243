package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// InitProducerID handles InitProducerId for a transactional id: it returns
// the producer id and epoch the producer must use, or a Kafka error code.
//
// A new id gets a fresh producer id at epoch 0. An existing one has its
// epoch bumped, which fences any older producer of the id; when the epoch
// is exhausted a new producer id is allocated. expectedPID/expectedEpoch
// (InitProducerId v3+, KIP-360; -1/-1 when absent) let a producer resume
// after an error: a matching pair is bumped, a retry of a bump already made
// gets the same answer, anything else is PRODUCER_FENCED. An Ongoing
// transaction is aborted first (its epoch bumped, so the old producer's
// writes are fenced) and the caller gets CONCURRENT_TRANSACTIONS and
// retries, as in Kafka.
func (c *Coordinator) InitProducerID(id string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (int64, int16, int16) {
	switch {
	case id == "":
		return -1, -1, kerr.InvalidRequest.Code
	case timeoutMs <= 0 || timeoutMs > c.cfg.MaxTimeoutMs:
		return -1, -1, kerr.InvalidTransactionTimeout.Code
	case (expectedPID == -1) != (expectedEpoch == -1):
		return -1, -1, kerr.InvalidRequest.Code
	}
	hasExpected := expectedPID != -1
	for {
		m, code := c.lookup(id)
		if code != 0 {
			return -1, -1, code
		}
		if m == nil {
			var err error
			if m, err = c.create(id, timeoutMs); err != nil {
				return -1, -1, kerr.CoordinatorNotAvailable.Code
			}
		}
		m.mu.Lock()
		if m.removed {
			m.mu.Unlock()
			continue
		}
		pid, epoch, code, fenced := c.initLocked(m, timeoutMs, hasExpected, expectedPID, expectedEpoch)
		m.mu.Unlock()
		if fenced {
			c.complete(m, false)
		}
		return pid, epoch, code
	}
}

// create registers a new transactional id with a fresh producer id and no
// epoch yet (the caller's transition makes it epoch 0).
func (c *Coordinator) create(id string, timeoutMs int32) (*txnMeta, error) {
	pid, err := c.ids.Next()
	if err != nil {
		c.log.Error("txn: cannot allocate a producer id", "transactional_id", id, "err", err)
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.txns[id]; m != nil { // created concurrently; the id is wasted, as in Kafka
		return m, nil
	}
	m := &txnMeta{id: id, snapshot: snapshot{
		producerID: pid, prevProducerID: -1, producerEpoch: -1, lastEpoch: -1,
		timeoutMs: timeoutMs, state: Empty, startMs: -1, updateMs: c.nowMs(),
		nextProducerID: -1,
	}}
	c.txns[id] = m
	c.byPID[pid] = m
	return m, nil
}

// initLocked is InitProducerID with m.mu held. fenced reports that an
// ongoing transaction was moved to PrepareAbort and must be completed.
func (c *Coordinator) initLocked(m *txnMeta, timeoutMs int32, hasExpected bool, expPID int64, expEpoch int16) (pid int64, epoch int16, code int16, fenced bool) {
	if m.pending || m.completing {
		return -1, -1, kerr.ConcurrentTransactions.Code, false
	}
	if hasExpected {
		valid := m.producerEpoch == -1 || expPID == m.producerID ||
			(expPID == m.prevProducerID && epochExhausted(expEpoch))
		if !valid {
			return -1, -1, kerr.ProducerFenced.Code, false
		}
	}
	now := c.nowMs()
	switch m.state {
	case PrepareCommit, PrepareAbort:
		return -1, -1, kerr.ConcurrentTransactions.Code, false

	case Ongoing:
		// Abort the ongoing transaction at a bumped epoch (fencing its
		// producer); the epoch is never returned: the client retries and
		// gets the next bump.
		if code := c.fenceLocked(m); code != 0 {
			return -1, -1, code, false
		}
		return -1, -1, kerr.ConcurrentTransactions.Code, true

	case Empty, CompleteCommit, CompleteAbort:
		next := m.snapshot
		next.state = Empty
		next.partitions = nil
		next.timeoutMs = timeoutMs
		next.startMs = -1
		next.updateMs = now
		next.prevProducerID = m.producerID
		if epochExhausted(m.producerEpoch) && (!hasExpected || expEpoch == m.producerEpoch) {
			newPID, err := c.ids.Next()
			if err != nil {
				c.log.Error("txn: cannot allocate a producer id", "transactional_id", m.id, "err", err)
				return -1, -1, kerr.CoordinatorNotAvailable.Code, false
			}
			next.producerID = newPID
			next.producerEpoch = 0
			next.lastEpoch = -1
			if hasExpected {
				next.lastEpoch = m.producerEpoch
			}
		} else {
			bumped := m.producerEpoch + 1
			switch {
			case !hasExpected:
				next.producerEpoch, next.lastEpoch = bumped, -1
			case m.producerEpoch == -1 || expEpoch == m.producerEpoch:
				next.producerEpoch, next.lastEpoch = bumped, m.producerEpoch
			case expEpoch == m.lastEpoch:
				// A retry of a bump whose answer was lost.
				next.producerEpoch, next.lastEpoch = m.producerEpoch, m.lastEpoch
			default:
				return -1, -1, kerr.ProducerFenced.Code, false
			}
		}
		if code := c.transit(m, next); code != 0 {
			return -1, -1, code, false
		}
		c.log.Info("txn: initialized transactional id", "transactional_id", m.id,
			"producer_id", m.producerID, "producer_epoch", m.producerEpoch)
		return m.producerID, m.producerEpoch, 0, false
	}
	c.log.Error("txn: transactional id in an impossible state", "transactional_id", m.id, "state", m.state)
	return -1, -1, kerr.UnknownServerError.Code, false
}

// fenceLocked moves m's Ongoing transaction to PrepareAbort at a bumped
// epoch (Kafka's PrepareEpochFence followed by the abort), so that its
// markers fence the producer on every partition. m.mu is held and m is
// Ongoing and not pending.
func (c *Coordinator) fenceLocked(m *txnMeta) int16 {
	if m.producerEpoch == 32767 {
		c.log.Error("txn: cannot fence a producer at the largest epoch", "transactional_id", m.id)
		return kerr.UnknownServerError.Code
	}
	next := m.snapshot
	next.producerEpoch = m.producerEpoch + 1
	next.lastEpoch = -1
	next.state = PrepareAbort
	next.updateMs = c.nowMs()
	m.state = PrepareEpochFence // the transient state Kafka reports meanwhile
	code := c.transit(m, next)
	if code != 0 {
		m.state = Ongoing
		return code
	}
	c.log.Info("txn: fenced producer and aborting its transaction", "transactional_id", m.id,
		"producer_id", m.producerID, "producer_epoch", m.producerEpoch)
	return 0
}
