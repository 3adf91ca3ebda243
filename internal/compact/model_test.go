package compact

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
)

// written is one record the model knows was acknowledged.
type written struct {
	key   string
	value *string
	ts    int64
	atMs  int64 // wall (fake) clock when appended
}

// TestModel drives random keyed writes, tombstones, rolls, clock jumps,
// cleaner passes (with a small dedupe map, so passes are partial) and
// power-loss crashes against a model, and after every step reads the log
// from offset 0: offsets strictly increase, every record is exactly what
// was written at its offset, each key's last record is its latest write —
// except a tombstone, which may be gone only once delete.retention.ms has
// passed since it was written, and then with no older record of the key.
func TestModel(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	var partial int64
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { partial += runModel(t, seed, 300) })
	}
	if partial == 0 {
		t.Fatal("no pass ever filled the dedupe map")
	}
}

func runModel(t *testing.T, seed uint64, steps int) int64 {
	rng := rand.New(rand.NewPCG(seed, seed*7))
	e := newEnv(t)
	e.dedup = slotSize * 40 // ~36 keys per pass: partial passes happen
	e.cfg.SegmentBytes = 1500
	e.cfg.FlushMessages = 1 // acknowledged = durable, so a crash loses nothing acked
	e.tcfg.DeleteRetentionMs = 5000
	e.tcfg.MinCleanableDirtyRatio = 0.3
	e.open()
	l := e.log("model")
	model := map[int64]written{}
	latest := map[string]int64{}
	codecs := []batch.Compression{batch.None, batch.None, batch.Gzip, batch.Zstd}
	pid := int64(100)
	var passes, removed, reaped, partial int64
	tally := func(r PassResult) {
		passes++
		removed += r.RecordsRead - r.RecordsKept
		reaped += r.TombstonesDropped
		if r.MapFull {
			partial++
		}
	}

	check := func(step int, what string) {
		t.Helper()
		recs, _ := readAll(t, l, 0)
		lastSeen := map[string]int64{}
		for _, r := range recs {
			w, ok := model[r.off]
			if !ok {
				t.Fatalf("step %d (%s): offset %d was never written", step, what, r.off)
			}
			if r.key != w.key || (r.value == nil) != (w.value == nil) || (r.value != nil && *r.value != *w.value) || r.ts != w.ts {
				t.Fatalf("step %d (%s): offset %d reads %q=%v@%d, wrote %q=%v@%d", step, what, r.off, r.key, r.value, r.ts, w.key, w.value, w.ts)
			}
			lastSeen[r.key] = r.off
		}
		now := e.clock.Now().UnixMilli()
		for k, off := range latest {
			got, ok := lastSeen[k]
			w := model[off]
			switch {
			case ok && got == off:
			case !ok && w.value == nil && now >= w.atMs+e.tcfg.DeleteRetentionMs:
				// tombstone reaped after its horizon, nothing older left
			case !ok:
				t.Fatalf("step %d (%s): key %q missing; latest write at %d (tombstone=%v, written %d ms ago)", step, what, k, off, w.value == nil, now-w.atMs)
			default:
				t.Fatalf("step %d (%s): key %q last record at %d, latest write at %d", step, what, k, got, off)
			}
		}
	}

	for step := 0; step < steps; step++ {
		var what string
		switch p := rng.IntN(100); {
		case p < 55:
			what = "append"
			b := batch.NewBuilder()
			b.Compression = codecs[rng.IntN(len(codecs))]
			b.BaseTimestamp = e.clock.Now().UnixMilli() - int64(rng.IntN(1000))
			if rng.IntN(4) == 0 {
				pid++
				b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, 0
			}
			n := 1 + rng.IntN(5)
			var ws []written
			for i := 0; i < n; i++ {
				k := fmt.Sprintf("key-%d", rng.IntN(60))
				w := written{key: k, ts: b.BaseTimestamp + int64(i), atMs: e.clock.Now().UnixMilli()}
				if rng.IntN(5) != 0 {
					v := fmt.Sprintf("v%d-%d", step, i)
					w.value = &v
				}
				var val []byte
				if w.value != nil {
					val = []byte(*w.value)
				}
				b.AddAt(w.ts, []byte(k), val, batch.RecordHeader{Key: "step", Value: []byte(fmt.Sprint(step))})
				ws = append(ws, w)
			}
			raw, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			res := e.append(l, raw)
			for i, w := range ws {
				model[res.BaseOffset+int64(i)] = w
				latest[w.key] = res.BaseOffset + int64(i)
			}
		case p < 65:
			what = "roll"
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		case p < 75:
			what = "clock"
			e.clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		case p < 90:
			what = "round"
			r, did, err := e.c.RunOnce()
			if err != nil {
				t.Fatalf("step %d: pass: %v", step, err)
			}
			if did {
				tally(r)
			}
		case p < 95:
			what = "clean-now"
			r, err := e.c.CleanNow("model", 0)
			if err != nil {
				t.Fatalf("step %d: pass: %v", step, err)
			}
			tally(r)
		default:
			what = "crash"
			e.crash()
			l = e.m.Get("model", 0)
		}
		check(step, what)
	}
	// Finally clean everything cleanable: below the active segment every
	// key appears at most once.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		res, err := e.c.CleanNow("model", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !res.MapFull && res.EndOffset == l.LogEndOffset() {
			break
		}
	}
	check(steps, "final")
	if passes == 0 || removed == 0 || reaped == 0 {
		t.Fatalf("vacuous run: %d passes, %d records removed, %d tombstones reaped", passes, removed, reaped)
	}
	recs, _ := readAll(t, l, 0)
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.key] {
			t.Fatalf("key %q appears twice after a full clean", r.key)
		}
		seen[r.key] = true
	}
	return partial
}
