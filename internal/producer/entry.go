package producer

import "math"

// WindowSize is how many of a producer's most recent batches a partition
// remembers for duplicate detection (Kafka: 5, matching the client's
// max.in.flight.requests.per.connection limit for idempotence).
const WindowSize = 5

// noEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH.
const noEpoch int16 = -1

// batchMeta is what a partition remembers about one appended batch.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64 // the batch's max timestamp as stored
}

// entry is one producer's state on one partition.
type entry struct {
	epoch            int16
	batches          [WindowSize]batchMeta // ring, oldest at head
	head, n          int
	lastTimestamp    int64
	coordinatorEpoch int32 // -1: no transaction marker seen
	// txnFirst is the first offset of the producer's ongoing transaction on
	// this partition, -1 when none is ongoing.
	txnFirst int64
}

func newEntry() *entry { return &entry{epoch: noEpoch, coordinatorEpoch: -1, txnFirst: -1} }

// setEpoch moves the entry to epoch, forgetting the batches of the old one
// (Kafka's maybeUpdateProducerEpoch).
func (e *entry) setEpoch(epoch int16) {
	if epoch != e.epoch {
		e.epoch = epoch
		e.head, e.n = 0, 0
	}
}

func (e *entry) empty() bool { return e.n == 0 }

func (e *entry) at(i int) *batchMeta { return &e.batches[(e.head+i)%WindowSize] }

func (e *entry) last() *batchMeta { return e.at(e.n - 1) }

// lastSeq is the last sequence written, or -1 when no batch is remembered.
func (e *entry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.last().lastSeq
}

// add records a batch; a new epoch forgets the batches of the old one.
func (e *entry) add(epoch int16, m batchMeta) {
	e.setEpoch(epoch)
	if e.n == WindowSize {
		e.head = (e.head + 1) % WindowSize
		e.n--
	}
	*e.at(e.n) = m
	e.n++
	e.lastTimestamp = m.timestamp
}

// findDuplicate returns the remembered batch with exactly this epoch and
// sequence range.
func (e *entry) findDuplicate(epoch int16, firstSeq, lastSeq int32) (batchMeta, bool) {
	if epoch != e.epoch {
		return batchMeta{}, false
	}
	for i := 0; i < e.n; i++ {
		if m := e.at(i); m.firstSeq == firstSeq && m.lastSeq == lastSeq {
			return *m, true
		}
	}
	return batchMeta{}, false
}

// incrementSequence adds delta to seq, wrapping past MaxInt32 to 0 the way
// Kafka's producer does.
func incrementSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// decrementSequence is the inverse of incrementSequence.
func decrementSequence(seq, delta int32) int32 {
	if seq < delta {
		return math.MaxInt32 - (delta - seq) + 1
	}
	return seq - delta
}

// inSequence reports whether next directly follows last.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}
