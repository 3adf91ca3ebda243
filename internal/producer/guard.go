package producer

import (
	"errors"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Guard adapts a partition's State to the partition log's producer-guard
// seam (log.ProducerGuard and log.ProducerGuardTruncator): the log calls
// Check before assigning offsets to a batch with a producer id and Appended
// after writing it, both under its append lock.
//
// On a follower (log.AppendAsFollower) only Appended, PendingCompletion and
// MarkerAppended run: the leader judged the batches, and the state learns
// them as they are, refusing nothing (Kafka's AppendOrigin.REPLICATION: an
// older epoch, a sequence gap or a fenced coordinator epoch is taken as the
// leader wrote it). The state is then the leader's, so that this replica,
// once leader, answers a producer's retry with the original offsets and
// keeps its transactions open.
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
		return false, 0, 0, appendErr(err)
	}
	return d.Found, d.BaseOffset, d.LastOffset, nil
}

// Appended implements the log seam; h carries the assigned offsets.
func (g *Guard) Appended(h batch.Header) { g.State.Appended(h, h.BaseOffset) }

// appendErr wraps a refusal as the *log.AppendError the log passes on.
func appendErr(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return &log.AppendError{Code: pe.Code, Batch: -1, Msg: pe.Msg, Err: pe}
	}
	return err
}

// CheckCoordinator implements log.TxnGuard (see State.CheckCoordinator).
func (g *Guard) CheckCoordinator(h batch.Header) error {
	if err := g.State.CheckCoordinator(h); err != nil {
		return appendErr(err)
	}
	return nil
}

// CheckMarker implements log.TxnGuard (see State.CheckMarker).
func (g *Guard) CheckMarker(m batch.Marker) error {
	if err := g.State.CheckMarker(m); err != nil {
		return appendErr(err)
	}
	return nil
}

// PendingCompletion implements log.TxnGuard.
func (g *Guard) PendingCompletion(m batch.Marker, offset int64) (log.CompletedTxn, int64, bool) {
	return g.State.PendingCompletion(m, offset)
}

// MarkerAppended implements log.TxnGuard.
func (g *Guard) MarkerAppended(m batch.Marker, offset int64) { g.State.MarkerAppended(m, offset) }

// FirstUnstableOffset implements log.TxnGuard.
func (g *Guard) FirstUnstableOffset() int64 { return g.State.FirstUnstableOffset() }

// FirstUndecidedOffset implements log.UndecidedTxnGuard.
func (g *Guard) FirstUndecidedOffset(hw int64) int64 { return g.State.FirstUndecidedOffset(hw) }

// Truncated implements the log's truncation hook: producers whose batches
// now lie wholly before the log start are forgotten (after retention or
// DeleteRecords; see State.TruncateHead), and batches at or past the new
// log end are dropped from every window; a producer left with no
// remembered batch is forgotten too, so its next batch is accepted at any
// sequence. After a suffix truncation the log calls RebuildTruncated
// instead, which also reopens a transaction whose marker was cut off; this
// trimming is its fallback when the rebuild fails.
func (g *Guard) Truncated(logStartOffset, logEndOffset int64) {
	g.State.TruncateHead(logStartOffset)
	g.State.truncateTail(logEndOffset)
}

// RebuildTruncated implements log.ProducerGuardRebuilder: after a suffix
// truncation the state is rebuilt from the log (State.RebuildTruncated);
// Truncated is then not called.
func (g *Guard) RebuildTruncated(fsys vfs.FS, l *log.Log) error {
	return g.State.RebuildTruncated(fsys, l)
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
		if e.txnFirst >= logEndOffset {
			s.endTxnLocked(id, e)
		}
		if e.n == 0 && e.txnFirst < 0 {
			delete(s.producers, id)
		}
	}
}
