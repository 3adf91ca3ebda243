package compact

import (
	"container/heap"
	"encoding/binary"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// cleanedTxns is the transaction state a cleaning pass carries from batch to
// batch, in log order (Kafka's CleanedTransactionMetadata): the log's
// aborted transactions, fed in by first offset as the walk reaches them,
// decide which data batches belong to an aborted transaction (they go), and
// which markers no longer have data of their transaction before them in the
// log (they may go once their delete horizon has passed).
type cleanedTxns struct {
	pending          abortedHeap                  // not reached yet, by first offset
	ongoingAborted   map[int64]*abortedInProgress // producer → its aborted transaction being walked
	ongoingCommitted map[int64]bool               // producers with data of a (not aborted) transaction walked
	// keep collects the aborted transactions whose marker stays with data
	// still before it: the cleaned segment's aborted-transaction index.
	keep []log.AbortedTxn
}

type abortedInProgress struct {
	txn      log.AbortedTxn
	observed bool // a data batch of it was walked in this pass
}

func newCleanedTxns(aborted []log.AbortedTxn) *cleanedTxns {
	c := &cleanedTxns{
		pending:          append(abortedHeap(nil), aborted...),
		ongoingAborted:   map[int64]*abortedInProgress{},
		ongoingCommitted: map[int64]bool{},
	}
	heap.Init(&c.pending)
	return c
}

// reach moves the aborted transactions starting at or before offset into
// the walk.
func (c *cleanedTxns) reach(offset int64) {
	for len(c.pending) > 0 && c.pending[0].FirstOffset <= offset {
		t := heap.Pop(&c.pending).(log.AbortedTxn)
		if c.ongoingAborted[t.ProducerID] == nil {
			c.ongoingAborted[t.ProducerID] = &abortedInProgress{txn: t}
		}
	}
}

// aborted implements txnFilter: a transactional data batch whose producer
// has an aborted transaction in progress belongs to it.
func (c *cleanedTxns) aborted(h *batch.Header) bool {
	c.reach(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if a := c.ongoingAborted[h.ProducerID]; a != nil {
		a.observed = true
		return true
	}
	c.ongoingCommitted[h.ProducerID] = true
	return false
}

// discardMarker implements txnFilter: whether a control batch may be
// removed, as far as its transaction goes (the caller applies the delete
// horizon). An abort marker stays while this pass saw data of its
// transaction before it (and its index entry is kept); a commit marker
// stays while this pass saw data of its transaction. A control batch with
// no record (emptied earlier) may go.
func (c *cleanedTxns) discardMarker(h *batch.Header, b []byte) bool {
	c.reach(h.LastOffset())
	if h.RecordCount == 0 {
		return true
	}
	typ, ok := controlType(b, h)
	if !ok {
		return false // unknown control record: keep
	}
	switch typ {
	case batch.ControlAbort:
		a := c.ongoingAborted[h.ProducerID]
		delete(c.ongoingAborted, h.ProducerID)
		if a != nil && a.observed {
			c.keep = append(c.keep, a.txn)
			return false
		}
		return true
	case batch.ControlCommit:
		had := c.ongoingCommitted[h.ProducerID]
		delete(c.ongoingCommitted, h.ProducerID)
		return !had
	}
	return false
}

// takeKept returns and forgets the index entries collected so far (one
// cleaned segment's worth).
func (c *cleanedTxns) takeKept() []log.AbortedTxn {
	k := c.keep
	c.keep = nil
	return k
}

// controlType reads the type of the first control record of an
// uncompressed control batch (markers are never compressed).
func controlType(b []byte, h *batch.Header) (batch.ControlType, bool) {
	if h.Compression() != batch.None {
		return 0, false
	}
	var r rawRecord
	if err := parseRawRecord(b[batch.HeaderSize:], &r); err != nil || r.key == nil || len(r.key) < 4 {
		return 0, false
	}
	return batch.ControlType(int16(binary.BigEndian.Uint16(r.key[2:]))), true
}

// abortedHeap orders aborted transactions by first offset.
type abortedHeap []log.AbortedTxn

func (a abortedHeap) Len() int           { return len(a) }
func (a abortedHeap) Less(i, j int) bool { return a[i].FirstOffset < a[j].FirstOffset }
func (a abortedHeap) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *abortedHeap) Push(x any)        { *a = append(*a, x.(log.AbortedTxn)) }
func (a *abortedHeap) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}
