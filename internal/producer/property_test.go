package producer

import (
	"math/rand/v2"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// TestIdempotenceProperty drives the state with simulated idempotent
// clients that pipeline up to five batches, lose responses, retry any
// unacknowledged batch in any order, bump their epoch, and see the broker
// "restart" (state rebuilt by replaying the log, or from a snapshot plus
// replay). Whatever happens:
//   - no batch is ever appended twice, and each producer epoch's batches are
//     in the log in sequence order without gaps;
//   - every acknowledgement of a batch carries the offsets it was appended at;
//   - a retried stale epoch is never appended.
//
// When restarts replay the whole log, every batch is eventually acknowledged.
func TestIdempotenceProperty(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		runIdempotenceModel(t, seed, seed%2 == 0)
	}
}

type modelBatch struct {
	epoch      int16
	seq, count int32
	appendedAt int64 // -1 until appended
	acked      bool
}

type modelClient struct {
	pid      int64
	epoch    int16
	nextSeq  int32
	batches  []*modelBatch // every batch of the current epoch
	lowUnack int
	stale    []*modelBatch // batches of older epochs, for fencing retries
}

type logEntry struct {
	h    batch.Header
	base int64
}

func runIdempotenceModel(t *testing.T, seed uint64, snapshots bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	dir := t.TempDir()
	s := NewState()
	var plog []logEntry
	var leo int64
	clients := []*modelClient{{pid: 10}, {pid: 11}, {pid: 12}}
	snapshotAt := int64(-1)

	send := func(c *modelClient, b *modelBatch) {
		h := hdr(c.pid, b.epoch, b.seq, b.count)
		d, err := s.Check(h)
		switch {
		case err != nil:
			if code(err) == CodeInvalidProducerEpoch {
				if b.epoch >= c.epoch {
					t.Fatalf("seed %d: current epoch fenced: %v", seed, err)
				}
				return
			}
			if code(err) != CodeOutOfOrderSequence {
				t.Fatalf("seed %d: unexpected %v", seed, err)
			}
			// Out of order: legitimate only when an earlier batch is
			// missing from the log, or (after a snapshot restart) the
			// batch is appended but no longer remembered.
			if b.appendedAt >= 0 && !snapshots && b.epoch == c.epoch {
				t.Fatalf("seed %d: appended batch %d/%d answered out of order: %v; client epoch %d window %d..%d", seed, b.epoch, b.seq, err, c.epoch, c.lowUnack, len(c.batches))
			}
			if b.appendedAt >= 0 && b.epoch == c.epoch {
				b.acked = true // the client would see an error; the data is safe
			}
		case d.Found:
			if b.appendedAt < 0 || d.BaseOffset != b.appendedAt || d.LastOffset != b.appendedAt+int64(b.count)-1 {
				t.Fatalf("seed %d: duplicate of %d/%d answered %+v, appended at %d", seed, b.epoch, b.seq, d, b.appendedAt)
			}
			if rng.IntN(3) > 0 && b.epoch == c.epoch {
				b.acked = true
			}
		default:
			if b.appendedAt >= 0 {
				t.Fatalf("seed %d: batch %d/%d appended twice", seed, b.epoch, b.seq)
			}
			s.Appended(h, leo)
			h.BaseOffset = leo
			plog = append(plog, logEntry{h, leo})
			b.appendedAt = leo
			leo += int64(b.count)
			if rng.IntN(3) > 0 && b.epoch == c.epoch {
				b.acked = true // response delivered
			}
		}
	}

	for step := 0; step < 300; step++ {
		c := clients[rng.IntN(len(clients))]
		for c.lowUnack < len(c.batches) && c.batches[c.lowUnack].acked {
			c.lowUnack++
		}
		switch r := rng.IntN(100); {
		case r < 45 && len(c.batches)-c.lowUnack < WindowSize:
			b := &modelBatch{epoch: c.epoch, seq: c.nextSeq, count: 1 + rng.Int32N(4), appendedAt: -1}
			c.nextSeq += b.count
			c.batches = append(c.batches, b)
			send(c, b)
		case r < 85 && c.lowUnack < len(c.batches):
			// Retry any unacknowledged batch (in-flight ones may arrive in any order).
			i := c.lowUnack + rng.IntN(len(c.batches)-c.lowUnack)
			send(c, c.batches[i])
		case r < 88 && len(c.stale) > 0:
			send(c, c.stale[rng.IntN(len(c.stale))])
		case r < 91:
			// Epoch bump: the client abandons its window (as after a fatal error).
			c.stale = append(c.stale, c.batches...)
			c.epoch++
			c.nextSeq, c.batches, c.lowUnack = 0, nil, 0
		case r < 94 && snapshots:
			if err := s.WriteSnapshot(vfs.OS(), dir, leo); err != nil {
				t.Fatal(err)
			}
			snapshotAt = leo
		case r < 97:
			// Restart: rebuild from the newest snapshot (if any) plus replay.
			s = NewState()
			from, err := s.LoadSnapshot(vfs.OS(), dir, 0, leo, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if snapshots && from != snapshotAt && snapshotAt >= 0 {
				t.Fatalf("seed %d: loaded snapshot %d, newest is %d", seed, from, snapshotAt)
			}
			for _, e := range plog {
				if e.base >= from {
					s.Replay(e.h)
				}
			}
		}
	}
	// Drain: retry until everything of the current epochs is acknowledged.
	for _, c := range clients {
		for _, b := range c.batches {
			for tries := 0; !b.acked; tries++ {
				if tries > 20 {
					t.Fatalf("seed %d: batch %d/%d never acknowledged (appended at %d)", seed, b.epoch, b.seq, b.appendedAt)
				}
				send(c, b)
				if b.appendedAt >= 0 {
					b.acked = true
				}
			}
		}
	}
	// Log invariants: per producer and epoch, dense sequences in order, each once.
	type key struct {
		pid   int64
		epoch int16
	}
	next := map[key]int32{}
	for _, e := range plog {
		k := key{e.h.ProducerID, e.h.ProducerEpoch}
		if want, ok := next[k]; ok && e.h.BaseSequence != want {
			t.Fatalf("seed %d: producer %d epoch %d: seq %d after %d", seed, k.pid, k.epoch, e.h.BaseSequence, want)
		} else if !ok && e.h.BaseSequence != 0 {
			t.Fatalf("seed %d: producer %d epoch %d starts at %d", seed, k.pid, k.epoch, e.h.BaseSequence)
		}
		next[k] = e.h.BaseSequence + e.h.LastOffsetDelta + 1
	}
	// Every batch of a current epoch is in the log.
	for _, c := range clients {
		if want := next[key{c.pid, c.epoch}]; len(c.batches) > 0 && want != c.nextSeq {
			t.Fatalf("seed %d: producer %d epoch %d log ends at seq %d, client at %d", seed, c.pid, c.epoch, want, c.nextSeq)
		}
	}
}
