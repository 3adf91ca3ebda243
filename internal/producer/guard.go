package producer

import (
	"errors"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// Guard adapts a partition's State to the partition log's producer-guard
// seam (log.ProducerGuard and log.ProducerGuardTruncator): the log calls
// Check before assigning offsets to a batch with a producer id and Appended
// after writing it, both under its append lock.
type Guard struct {
	State *State
}

// NewGuard returns a guard over s (a new State when s is nil).
func NewGuard(s *State) *Guard {
	if s == nil {
		s = NewState()
	}
	return &Guard{State: s}
}

// Check implements the log seam: dup reports an idempotent retry with the
// original offsets; err is a *log.AppendError carrying the Kafka code (and
// wrapping the *Error), which the log passes through unchanged.
func (g *Guard) Check(h batch.Header) (dup bool, baseOffset, lastOffset int64, err error) {
	d, err := g.State.Check(h)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			err = &log.AppendError{Code: pe.Code, Batch: -1, Msg: pe.Msg, Err: pe}
		}
		return false, 0, 0, err
	}
	return d.Found, d.BaseOffset, d.LastOffset, nil
}

// Appended implements the log seam; h carries the assigned offsets.
func (g *Guard) Appended(h batch.Header) { g.State.Appended(h, h.BaseOffset) }

// Truncated implements the log's truncation hook: producers whose batches
// now lie wholly before the log start are forgotten (as Kafka does after
// retention or DeleteRecords), and batches at or past the new log end are
// dropped from every window; a producer left with no remembered batch is
// forgotten too, so its next batch is accepted at any sequence — the
// conservative choice, since its earlier history is no longer known
// without a full rebuild.
func (g *Guard) Truncated(logStartOffset, logEndOffset int64) {
	g.State.TruncateHead(logStartOffset)
	g.State.truncateTail(logEndOffset)
}

// truncateTail drops remembered batches ending at or after logEndOffset.
func (s *State) truncateTail(logEndOffset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end = min(s.end, logEndOffset)
	s.snapEnd = min(s.snapEnd, logEndOffset)
	for id, e := range s.producers {
		for e.n > 0 && e.last().lastOffset >= logEndOffset {
			e.n--
		}
		if e.n == 0 {
			delete(s.producers, id)
		}
	}
}
