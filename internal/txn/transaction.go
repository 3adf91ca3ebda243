package txn

import (
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
)

// checkProducer finds id's metadata for a request from producer pid/epoch
// and locks it. On a non-zero code nothing is locked.
func (c *Coordinator) checkProducer(id string, pid int64, epoch int16) (*txnMeta, int16) {
	if id == "" {
		return nil, kerr.InvalidRequest.Code
	}
	m, code := c.lookup(id)
	if code != 0 {
		return nil, code
	}
	if m == nil {
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	m.mu.Lock()
	switch {
	case m.removed || m.producerID != pid:
		code = kerr.InvalidProducerIDMapping.Code
	case m.producerEpoch != epoch:
		code = kerr.ProducerFenced.Code
	}
	if code != 0 {
		m.mu.Unlock()
		return nil, code
	}
	return m, 0
}

// AddPartitions handles AddPartitionsToTxn (and AddOffsetsToTxn, which adds
// the group's __consumer_offsets partition): the partitions join producer
// pid/epoch's transaction, which becomes Ongoing. The caller has checked
// that the partitions exist.
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, parts []TopicPartition) int16 {
	return c.addPartitions(id, pid, epoch, parts, false)
}

// AddPartitionsTV2 is AddPartitions for Kafka's broker-to-broker form
// (AddPartitionsToTxn v4+), which a partition leader sends for a transaction
// version 2 producer: a transaction it starts is a TV2 one.
func (c *Coordinator) AddPartitionsTV2(id string, pid int64, epoch int16, parts []TopicPartition) int16 {
	return c.addPartitions(id, pid, epoch, parts, true)
}

func (c *Coordinator) addPartitions(id string, pid int64, epoch int16, parts []TopicPartition, tv2 bool) int16 {
	m, code := c.checkProducer(id, pid, epoch)
	if code != 0 {
		return code
	}
	defer m.mu.Unlock()
	if m.pending || m.state == PrepareCommit || m.state == PrepareAbort {
		return kerr.ConcurrentTransactions.Code
	}
	if m.state == Ongoing {
		all := true
		for _, tp := range parts {
			if _, ok := m.partitions[tp]; !ok {
				all = false
				break
			}
		}
		if all {
			return 0
		}
	}
	now := c.nowMs()
	next := m.snapshot
	next.state = Ongoing
	next.partitions = make(map[TopicPartition]struct{}, len(m.partitions)+len(parts))
	for tp := range m.partitions {
		next.partitions[tp] = struct{}{}
	}
	for _, tp := range parts {
		next.partitions[tp] = struct{}{}
	}
	if m.state != Ongoing {
		next.startMs = now
		next.tv2 = tv2
	}
	next.updateMs = now
	return c.transit(m, next)
}

// Verify reports whether tp is part of producer pid/epoch's ongoing
// transaction (TxnOffsetCommit checks its __consumer_offsets partition, as
// Kafka's transaction verification does): INVALID_PRODUCER_ID_MAPPING,
// PRODUCER_FENCED, CONCURRENT_TRANSACTIONS while it completes, and
// INVALID_TXN_STATE when the partition was not added.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tp TopicPartition) int16 {
	m, code := c.checkProducer(id, pid, epoch)
	if code != 0 {
		return code
	}
	defer m.mu.Unlock()
	switch {
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return kerr.ConcurrentTransactions.Code
	case m.state != Ongoing:
		return kerr.InvalidTxnState.Code
	}
	if _, ok := m.partitions[tp]; !ok {
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// verifyProduceLocked checks a transactional produce of producer pid/epoch
// to tp (Kafka's transaction.partition.verification.enable): tp must be part
// of the producer's ongoing transaction. It answers 0 (returning the id's
// metadata with its mu held), INVALID_TXN_STATE when the partition was not
// added (or no transaction is ongoing), INVALID_PRODUCER_EPOCH for another
// epoch, INVALID_PRODUCER_ID_MAPPING for a producer id no transactional id
// holds, and NOT_ENOUGH_REPLICAS (which clients retry) while the transaction
// completes or the coordinator loads, as Kafka maps retriable coordinator
// errors for produce.
func (c *Coordinator) verifyProduceLocked(pid int64, epoch int16, tp TopicPartition) (*txnMeta, int16) {
	c.mu.Lock()
	m, loading, closed := c.byPID[pid], c.loading, c.closed
	c.mu.Unlock()
	switch {
	case loading:
		return nil, kerr.NotEnoughReplicas.Code
	case closed:
		return nil, kerr.NotEnoughReplicas.Code
	case m == nil:
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	m.mu.Lock()
	code := int16(0)
	switch {
	case m.removed || m.producerID != pid:
		code = kerr.InvalidProducerIDMapping.Code
	case epoch != m.producerEpoch:
		code = kerr.InvalidProducerEpoch.Code
	case m.pending || m.completing || m.state == PrepareCommit || m.state == PrepareAbort || m.state == PrepareEpochFence:
		code = kerr.NotEnoughReplicas.Code
	case m.state != Ongoing:
		code = kerr.InvalidTxnState.Code
	default:
		if _, ok := m.partitions[tp]; !ok {
			code = kerr.InvalidTxnState.Code
		}
	}
	if code != 0 {
		m.mu.Unlock()
		return nil, code
	}
	return m, 0
}

// BeginProduce checks a transactional append about to be made (see
// verifyProduceLocked for the answers): when the answer is 0 the append is admitted, and the transaction's
// markers are not written until release is called (after the append), so a
// batch verified while its transaction was Ongoing can never land after the
// marker that ends it — which would open a transaction on the partition that
// nothing ever ends, holding its last stable offset back for good (Kafka's
// hanging transaction, KIP-890). release is nil when the code is not 0, and
// a no-op with verification disabled.
func (c *Coordinator) BeginProduce(pid int64, epoch int16, tp TopicPartition) (release func(), code int16) {
	if c.cfg.NoProduceVerification {
		return func() {}, 0
	}
	m, code := c.verifyProduceLocked(pid, epoch, tp)
	if code != 0 {
		return nil, code
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

// EndTxn handles EndTxn from producer pid/epoch: the transaction moves to
// PrepareCommit or PrepareAbort (durably: the outcome is decided), its
// markers are written to every partition, and it completes. A retry of an
// end that already completed succeeds; one still completing gets
// CONCURRENT_TRANSACTIONS; a contradicting one, or ending a transaction
// that never started, INVALID_TXN_STATE.
func (c *Coordinator) EndTxn(id string, pid int64, epoch int16, commit bool) int16 {
	m, code := c.checkProducer(id, pid, epoch)
	if code != 0 {
		return code
	}
	if m.pending {
		m.mu.Unlock()
		return kerr.ConcurrentTransactions.Code
	}
	want := PrepareAbort
	if commit {
		want = PrepareCommit
	}
	code = 0
	switch m.state {
	case Ongoing:
		next := m.snapshot
		next.state = want
		next.updateMs = c.nowMs()
		code = c.transit(m, next)
		m.mu.Unlock()
		if code == 0 {
			if testHookPrepared != nil {
				testHookPrepared()
			}
			// The answer waits for the markers, even when the sweep got
			// to them first.
			c.complete(m, true)
		}
		return code
	case CompleteCommit:
		if !commit {
			code = kerr.InvalidTxnState.Code
		}
	case CompleteAbort:
		if commit {
			code = kerr.InvalidTxnState.Code
		}
	case PrepareCommit, PrepareAbort:
		code = kerr.InvalidTxnState.Code
		if m.state == want {
			code = kerr.ConcurrentTransactions.Code
		}
	default: // Empty
		code = kerr.InvalidTxnState.Code
	}
	m.mu.Unlock()
	return code
}

// testHookPrepared, when set by a test, runs in EndTxn between the durable
// decision and the completion.
var testHookPrepared func()

// complete writes the markers of m's PrepareCommit/PrepareAbort
// transaction and then its CompleteCommit/CompleteAbort state. Partitions
// whose marker cannot be written stay in the transaction and the sweep
// tries again; only one caller works on a transaction at a time. With wait,
// a caller that finds another one at work waits until it is done.
func (c *Coordinator) complete(m *txnMeta, wait bool) {
	m.mu.Lock()
	if m.completing && wait {
		done := m.completed
		m.mu.Unlock()
		<-done
		return
	}
	if m.completing || m.pending || (m.state != PrepareCommit && m.state != PrepareAbort) {
		m.mu.Unlock()
		return
	}
	m.completing = true
	m.completed = make(chan struct{})
	// Appends admitted while the transaction was Ongoing land before its
	// markers (none is admitted any more: the state is Prepare*).
	for m.appending > 0 {
		if m.idle == nil {
			m.idle = sync.NewCond(&m.mu)
		}
		m.idle.Wait()
	}
	mk := batch.Marker{ProducerID: m.producerID, ProducerEpoch: m.producerEpoch, Type: batch.ControlAbort, Timestamp: c.nowMs()}
	if m.state == PrepareCommit {
		mk.Type = batch.ControlCommit
	}
	parts := m.sortedPartitions()
	m.mu.Unlock()

	var failed []TopicPartition
	for _, tp := range parts {
		err := c.parts.WriteMarker(tp, mk)
		switch {
		case err == nil:
		case errors.Is(err, ErrPartitionGone):
			c.log.Info("txn: partition of a transaction is gone; no marker written",
				"transactional_id", m.id, "topic", tp.Topic, "partition", tp.Partition)
		case errors.Is(err, ErrMarkerFenced):
			c.log.Warn("txn: partition refused a stale marker", "transactional_id", m.id,
				"topic", tp.Topic, "partition", tp.Partition, "producer_id", mk.ProducerID, "producer_epoch", mk.ProducerEpoch)
		default:
			c.log.Error("txn: cannot write transaction marker; will retry", "transactional_id", m.id,
				"topic", tp.Topic, "partition", tp.Partition, "marker", mk.Type, "err", err)
			failed = append(failed, tp)
		}
	}

	m.mu.Lock()
	defer func() {
		m.completing = false
		close(m.completed)
		m.mu.Unlock()
	}()
	if len(failed) > 0 {
		// Only the partitions still owed a marker remain (in memory; the
		// durable Prepare record keeps them all, and markers may be
		// written twice, as in Kafka).
		left := make(map[TopicPartition]struct{}, len(failed))
		for _, tp := range failed {
			left[tp] = struct{}{}
		}
		m.partitions = left
		return
	}
	next := m.snapshot
	next.state = CompleteAbort
	if m.state == PrepareCommit {
		next.state = CompleteCommit
	}
	if m.nextProducerID >= 0 {
		// A TV2 transaction whose epoch ran out: the producer continues
		// with the new id at epoch 0 (EndTxn v5 told it so).
		next.prevProducerID = m.producerID
		next.producerID, next.producerEpoch = m.nextProducerID, 0
		next.nextProducerID = -1
	}
	next.partitions = nil
	next.updateMs = c.nowMs()
	code := c.transit(m, next) // completing keeps others out while transit releases mu
	if code != 0 {
		c.log.Error("txn: cannot record the completion; will retry", "transactional_id", m.id)
		return
	}
	c.log.Debug("txn: transaction completed", "transactional_id", m.id, "state", m.state,
		"producer_id", m.producerID, "producer_epoch", m.producerEpoch)
}
