package producer

import (
	"errors"
	"math"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
)

func hdr(pid int64, epoch int16, seq int32, count int32) batch.Header {
	return batch.Header{
		Magic: 2, Length: batch.MinLength, ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: seq, LastOffsetDelta: count - 1, RecordCount: count, MaxTimestamp: 1000 + int64(seq),
	}
}

func code(err error) int16 {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err != nil {
		return -2
	}
	return 0
}

// appendTo runs Check and, when the batch is new, Appended at *leo.
func appendTo(t *testing.T, s *State, h batch.Header, leo *int64) (Duplicate, error) {
	t.Helper()
	d, err := s.Check(h)
	if err != nil || d.Found {
		return d, err
	}
	s.Appended(h, *leo)
	*leo += int64(h.LastOffsetDelta) + 1
	return d, nil
}

func TestCheckRules(t *testing.T) {
	s := NewState()
	var leo int64
	mustOK := func(h batch.Header) {
		t.Helper()
		d, err := appendTo(t, s, h, &leo)
		if err != nil || d.Found {
			t.Fatalf("append %+v: dup=%v err=%v", h, d.Found, err)
		}
	}
	// Non-idempotent batches are always fine.
	mustOK(hdr(-1, -1, -1, 3))
	// A new producer may start at any sequence (Kafka 4 behaviour).
	mustOK(hdr(7, 0, 42, 2)) // seqs 42,43 at offsets 3,4
	mustOK(hdr(7, 0, 44, 1)) // offset 5
	// Retry of an earlier batch: original offsets, nothing appended.
	d, err := s.Check(hdr(7, 0, 42, 2))
	if err != nil || !d.Found || d.BaseOffset != 3 || d.LastOffset != 4 || d.Timestamp != 1042 {
		t.Fatalf("duplicate: %+v %v", d, err)
	}
	// Same first sequence but another length is not a duplicate: out of order.
	if _, err := s.Check(hdr(7, 0, 42, 1)); code(err) != CodeOutOfOrderSequence {
		t.Fatalf("overlapping batch: %v", err)
	}
	// Gap.
	if _, err := s.Check(hdr(7, 0, 46, 1)); code(err) != CodeOutOfOrderSequence {
		t.Fatalf("gap: %v", err)
	}
	// Negative sequence with a producer id.
	if _, err := s.Check(hdr(7, 0, -1, 1)); code(err) != CodeInvalidRecord {
		t.Fatalf("negative sequence: %v", err)
	}
	// New epoch must start at 0.
	if _, err := s.Check(hdr(7, 1, 45, 1)); code(err) != CodeOutOfOrderSequence {
		t.Fatalf("new epoch at 45: %v", err)
	}
	mustOK(hdr(7, 1, 0, 1))
	// The old epoch is fenced, even for what would have been a duplicate.
	if _, err := s.Check(hdr(7, 0, 45, 1)); code(err) != CodeInvalidProducerEpoch {
		t.Fatalf("stale epoch: %v", err)
	}
	if _, err := s.Check(hdr(7, 0, 42, 2)); code(err) != CodeInvalidProducerEpoch {
		t.Fatalf("stale epoch duplicate: %v", err)
	}
	// Control batches are not sequence-checked.
	ctl := hdr(7, 0, 99, 1)
	ctl.Attributes = 0x20
	if _, err := s.Check(ctl); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func TestWindowIsFiveBatches(t *testing.T) {
	s := NewState()
	var leo int64
	for i := int32(0); i < 8; i++ {
		if d, err := appendTo(t, s, hdr(1, 0, i, 1), &leo); err != nil || d.Found {
			t.Fatalf("batch %d: %v %v", i, d, err)
		}
	}
	for i := int32(0); i < 8; i++ {
		d, err := s.Check(hdr(1, 0, i, 1))
		if i >= 3 {
			if err != nil || !d.Found || d.BaseOffset != int64(i) {
				t.Fatalf("seq %d should be a duplicate at %d: %+v %v", i, i, d, err)
			}
		} else if code(err) != CodeOutOfOrderSequence {
			t.Fatalf("seq %d is older than the window: %+v %v", i, d, err)
		}
	}
}

func TestSequenceWrap(t *testing.T) {
	s := NewState()
	var leo int64
	if _, err := appendTo(t, s, hdr(1, 0, math.MaxInt32-1, 2), &leo); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(hdr(1, 0, 0, 1)); err != nil {
		t.Fatalf("wrap to 0: %v", err)
	}
	// A batch spanning the wrap.
	s2 := NewState()
	leo = 0
	if _, err := appendTo(t, s2, hdr(1, 0, math.MaxInt32, 3), &leo); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Check(hdr(1, 0, 2, 1)); err != nil {
		t.Fatalf("after spanning wrap: %v", err)
	}
	if d, _ := s2.Check(hdr(1, 0, math.MaxInt32, 3)); !d.Found {
		t.Fatal("spanning batch not recognised as duplicate")
	}
	if incrementSequence(decrementSequence(1, 5), 5) != 1 {
		t.Fatal("decrement/increment are not inverse")
	}
}

func TestTruncateHeadAndExpire(t *testing.T) {
	s := NewState()
	var leo int64
	appendTo(t, s, hdr(1, 0, 0, 5), &leo) // 0..4
	appendTo(t, s, hdr(2, 0, 0, 5), &leo) // 5..9
	appendTo(t, s, hdr(1, 0, 5, 1), &leo) // 10
	s.TruncateHead(10)
	if s.Len() != 1 {
		t.Fatalf("after TruncateHead(10): %d producers", s.Len())
	}
	// Producer 2 is forgotten: any sequence goes.
	if _, err := s.Check(hdr(2, 0, 77, 1)); err != nil {
		t.Fatal(err)
	}
	if n := s.Expire(1005+86400000, 86400000); n != 1 || s.Len() != 0 {
		t.Fatalf("expire removed %d, left %d", n, s.Len())
	}
}

func TestGuardTruncation(t *testing.T) {
	g := NewGuard(nil)
	var leo int64
	for i := int32(0); i < 4; i++ {
		h := hdr(1, 0, i, 1)
		if dup, _, _, err := g.Check(h); dup || err != nil {
			t.Fatal(dup, err)
		}
		h.BaseOffset = leo
		g.Appended(h)
		leo++
	}
	h := hdr(2, 0, 0, 1)
	h.BaseOffset = leo
	g.Appended(h) // producer 2 at offset 4
	if dup, base, last, err := g.Check(hdr(1, 0, 2, 1)); !dup || base != 2 || last != 2 || err != nil {
		t.Fatalf("dup: %v %d %d %v", dup, base, last, err)
	}
	// Suffix truncation to 3: producer 1's batch at 3 is gone, producer 2 forgotten.
	g.Truncated(0, 3)
	if _, _, _, err := g.Check(hdr(1, 0, 3, 1)); err != nil {
		t.Fatalf("seq 3 after truncation: %v", err)
	}
	if g.State.Len() != 1 {
		t.Fatalf("%d producers left", g.State.Len())
	}
}
