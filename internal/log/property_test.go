package log

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// TestPropertyCrashRecovery drives a log with random appends, rolls,
// flushes, retention, prefix and suffix truncations and crashes (power loss
// with torn, sometimes garbled tails) against an in-memory model. After
// every recovery: every record known durable is present and byte-identical,
// offsets are dense, nothing is duplicated, the log start never goes back.
func TestPropertyCrashRecovery(t *testing.T) {
	seeds := 25
	if testing.Short() {
		seeds = 5
	}
	for seed := 0; seed < seeds; seed++ {
		runProperty(t, uint64(seed))
	}
}

func runProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	cfg := DefaultConfig()
	cfg.SegmentBytes = int64(4000 + rng.IntN(4000))
	cfg.IndexIntervalBytes = rng.IntN(600)
	cfg.RetentionMs = -1
	if rng.IntN(3) == 0 {
		cfg.FlushMessages = 1
	}
	e := newEnv(t, cfg)
	l := e.log()
	model := map[int64][]byte{} // batch base offset → stored bytes
	var modelLEO, modelStart, durable int64
	now := e.clock.Now().UnixMilli()

	check := func(where string) {
		t.Helper()
		if l.LogEndOffset() < durable {
			t.Fatalf("seed %d %s: leo %d below durable %d", seed, where, l.LogEndOffset(), durable)
		}
		if l.LogStartOffset() != modelStart && !(l.LogStartOffset() > modelStart && l.LogStartOffset() == l.LogEndOffset()) {
			t.Fatalf("seed %d %s: start %d, model %d", seed, where, l.LogStartOffset(), modelStart)
		}
		hs := readAll(t, l, l.LogStartOffset())
		got, err := l.ReadBytes(l.LogStartOffset(), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			want, ok := model[h.BaseOffset]
			if !ok || !bytes.Equal(want, got[:h.TotalSize()]) {
				t.Fatalf("seed %d %s: batch at %d not what was appended", seed, where, h.BaseOffset)
			}
			got = got[h.TotalSize():]
		}
		if len(hs) > 0 && hs[len(hs)-1].LastOffset()+1 != l.LogEndOffset() {
			t.Fatalf("seed %d %s: last batch ends at %d, leo %d", seed, where, hs[len(hs)-1].LastOffset(), l.LogEndOffset())
		}
	}

	for op := 0; op < 300; op++ {
		switch k := rng.IntN(100); {
		case k < 60: // append 1..3 batches
			var recs []byte
			for i := 0; i < 1+rng.IntN(3); i++ {
				recs = append(recs, mkBatch(t, 1+rng.IntN(4), rng.IntN(300), now+int64(op))...)
			}
			r, err := l.Append(recs, AppendOptions{LeaderEpoch: int32(op / 50)})
			if err != nil {
				t.Fatalf("seed %d: append: %v", seed, err)
			}
			for pos := 0; pos < len(recs); {
				h, _ := batch.ParseHeader(recs[pos:])
				model[h.BaseOffset] = append([]byte(nil), recs[pos:pos+h.TotalSize()]...)
				pos += h.TotalSize()
			}
			modelLEO = r.LastOffset + 1
			if cfg.FlushMessages == 1 {
				durable = modelLEO
			}
		case k < 68:
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		case k < 76:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			durable = modelLEO
		case k < 80 && modelLEO > modelStart:
			to := modelStart + rng.Int64N(modelLEO-modelStart+1)
			if err := l.TruncatePrefix(to); err != nil {
				t.Fatal(err)
			}
			modelStart = max(modelStart, to)
		case k < 84 && modelLEO > modelStart:
			to := modelStart + rng.Int64N(modelLEO-modelStart)
			if err := l.TruncateTo(to); err != nil {
				t.Fatal(err)
			}
			modelLEO = l.LogEndOffset()
			if modelLEO < modelStart {
				modelStart = modelLEO
			}
			durable = min(durable, modelLEO)
			for b := range model {
				if b >= modelLEO {
					delete(model, b)
				}
			}
			check("truncate")
		case k < 88:
			e.m.RunHousekeeping()
		case k < 94: // power loss
			e.crash(vfs.CrashOptions{Rand: rng, TornTail: rng.IntN(2) == 0, Garble: rng.IntN(2) == 0})
			l = e.log()
			check("crash")
			modelLEO = l.LogEndOffset()
			modelStart = l.LogStartOffset()
			for b := range model {
				if b >= modelLEO {
					delete(model, b)
				}
			}
			durable = modelLEO // recovery flushes what it kept
		case k < 97:
			e.restart()
			l = e.log()
			check("restart")
			durable = modelLEO
		default:
			e.fs.ProcessCrash()
			e.open()
			l = e.log()
			if l.LogEndOffset() != modelLEO {
				t.Fatalf("seed %d: process crash lost data: %d vs %d", seed, l.LogEndOffset(), modelLEO)
			}
			check("process crash")
			durable = modelLEO
		}
	}
	check("end")
}
