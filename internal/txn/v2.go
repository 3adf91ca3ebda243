package txn

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transaction version 2 (KIP-890 part 2). A TV2 producer sends no
// AddPartitionsToTxn or AddOffsetsToTxn: the partition leader adds the
// partition of a transactional Produce v12+ (and the group coordinator that
// of a TxnOffsetCommit v5+) to the transaction itself (BeginProduceAdd),
// which starts the transaction if none is ongoing. EndTxn v5+ (EndTxnV2)
// bumps the producer epoch at every commit or abort: the decision record
// carries the bumped epoch, the markers are written with it (fencing every
// batch of the old epoch on every partition), and the answer tells the
// producer its new epoch — or, when the epoch ran out, a new producer id at
// epoch 0. An abort with nothing added is allowed and still bumps the epoch.

// maxEpoch is the largest producer epoch.
const maxEpoch = 32767

// EndTxnV2 handles EndTxn v5+ from producer pid/epoch and returns the
// producer id and epoch the producer continues with. A retry of an end
// whose answer was lost (the producer still at the epoch before the bump,
// or at the previous producer id after an overflow) gets the same answer
// when the transaction completed as asked; CONCURRENT_TRANSACTIONS while it
// completes; INVALID_TXN_STATE for a commit with no transaction or a
// contradicting retry; PRODUCER_FENCED for any other epoch,
// INVALID_PRODUCER_ID_MAPPING for another producer id.
func (c *Coordinator) EndTxnV2(id string, pid int64, epoch int16, commit bool) (int64, int16, int16) {
	if id == "" {
		return -1, -1, kerr.InvalidRequest.Code
	}
	m, code := c.lookup(id)
	if code != 0 {
		return -1, -1, code
	}
	if m == nil {
		return -1, -1, kerr.InvalidProducerIDMapping.Code
	}
	m.mu.Lock()
	retryOnBump := m.tv2 && m.producerID == pid && epoch >= 0 && epoch == m.producerEpoch-1
	retryOnOverflow := m.tv2 && m.prevProducerID == pid && m.producerID != pid && epoch == maxEpoch-1 && m.producerEpoch == 0
	isRetry := retryOnBump || retryOnOverflow
	switch {
	case m.removed || (m.producerID != pid && !retryOnOverflow):
		m.mu.Unlock()
		return -1, -1, kerr.InvalidProducerIDMapping.Code
	case epoch != m.producerEpoch && !isRetry:
		m.mu.Unlock()
		return -1, -1, kerr.ProducerFenced.Code
	case m.pending:
		m.mu.Unlock()
		return -1, -1, kerr.ConcurrentTransactions.Code
	}
	want := PrepareAbort
	if commit {
		want = PrepareCommit
	}
	answer := func(code int16) (int64, int16, int16) {
		p, e := m.producerID, m.producerEpoch
		m.mu.Unlock()
		if code != 0 {
			return -1, -1, code
		}
		return p, e, 0
	}
	switch m.state {
	case Ongoing:
		if isRetry {
			return answer(kerr.ProducerFenced.Code)
		}
		return c.prepareV2(m, want, false)
	case PrepareCommit, PrepareAbort:
		if isRetry && m.state == want {
			return answer(kerr.ConcurrentTransactions.Code)
		}
		return answer(kerr.InvalidTxnState.Code)
	case CompleteCommit, CompleteAbort:
		done := CompleteAbort
		if commit {
			done = CompleteCommit
		}
		switch {
		case isRetry && m.state == done:
			return answer(0)
		case !isRetry && !commit:
			return c.prepareV2(m, PrepareAbort, true)
		}
		return answer(kerr.InvalidTxnState.Code)
	case Empty:
		if !isRetry && !commit {
			return c.prepareV2(m, PrepareAbort, true)
		}
		return answer(kerr.InvalidTxnState.Code)
	case PrepareEpochFence:
		return answer(kerr.ConcurrentTransactions.Code)
	}
	return answer(kerr.InvalidTxnState.Code)
}

// prepareV2 records want (PrepareCommit or PrepareAbort) at the bumped
// epoch, completes the transaction and returns the producer's next id and
// epoch. empty: an abort with nothing added (it starts now). m.mu is held
// and released.
func (c *Coordinator) prepareV2(m *txnMeta, want State, empty bool) (int64, int16, int16) {
	now := c.nowMs()
	next := m.snapshot
	next.state = want
	next.tv2 = true
	next.updateMs = now
	next.nextProducerID = -1
	if empty {
		next.partitions = nil
		next.startMs = now
	}
	if epochExhausted(m.producerEpoch) {
		// The markers take the last epoch; the producer moves to a new id.
		newPID, err := c.ids.Next()
		if err != nil {
			c.log.Error("txn: cannot allocate a producer id", "transactional_id", m.id, "err", err)
			m.mu.Unlock()
			return -1, -1, kerr.CoordinatorNotAvailable.Code
		}
		next.nextProducerID = newPID
	}
	if m.producerEpoch < maxEpoch {
		next.producerEpoch = m.producerEpoch + 1
	}
	next.lastEpoch = m.producerEpoch
	code := c.transit(m, next)
	m.mu.Unlock()
	if code != 0 {
		return -1, -1, code
	}
	if testHookPrepared != nil {
		testHookPrepared()
	}
	c.complete(m, true)
	if next.nextProducerID >= 0 {
		return next.nextProducerID, 0, 0
	}
	return next.producerID, next.producerEpoch, 0
}

// BeginProduceAdd is BeginProduce for a TV2 producer (Produce v12+,
// TxnOffsetCommit v5+): a partition not yet in the producer's transaction is
// added to it (durably), starting the transaction when none is ongoing,
// instead of being refused. The answers are BeginProduce's, and
// NOT_ENOUGH_REPLICAS when the addition cannot be written.
func (c *Coordinator) BeginProduceAdd(pid int64, epoch int16, tp TopicPartition) (release func(), code int16) {
	c.mu.Lock()
	m, loading, closed := c.byPID[pid], c.loading, c.closed
	c.mu.Unlock()
	switch {
	case loading || closed:
		return nil, kerr.NotEnoughReplicas.Code
	case m == nil:
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	m.mu.Lock()
	for m.pending {
		if m.settled == nil {
			m.settled = sync.NewCond(&m.mu)
		}
		m.settled.Wait()
	}
	switch {
	case m.removed || m.producerID != pid:
		code = kerr.InvalidProducerIDMapping.Code
	case epoch != m.producerEpoch:
		code = kerr.InvalidProducerEpoch.Code
	case m.completing || m.state == PrepareCommit || m.state == PrepareAbort || m.state == PrepareEpochFence:
		code = kerr.NotEnoughReplicas.Code
	}
	if code != 0 {
		m.mu.Unlock()
		return nil, code
	}
	if _, ok := m.partitions[tp]; !ok || m.state != Ongoing {
		now := c.nowMs()
		next := m.snapshot
		next.partitions = make(map[TopicPartition]struct{}, len(m.partitions)+1)
		if m.state == Ongoing {
			for p := range m.partitions {
				next.partitions[p] = struct{}{}
			}
		} else {
			next.startMs = now
		}
		next.partitions[tp] = struct{}{}
		next.state = Ongoing
		next.tv2 = true
		next.updateMs = now
		if code := c.transit(m, next); code != 0 {
			m.mu.Unlock()
			return nil, kerr.NotEnoughReplicas.Code
		}
	}
	m.appending++
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.appending--
			if m.appending == 0 && m.idle != nil {
				m.idle.Broadcast()
			}
			m.mu.Unlock()
		})
	}, 0
}
