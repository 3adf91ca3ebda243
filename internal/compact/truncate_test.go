package compact

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
)

// A log truncated below its cleaner checkpoint (a follower cutting a
// diverged or lost tail) and then appended to again beyond the old
// checkpoint before the cleaner looks: the records appended again are
// dirty. Their tombstone must remove the older value of its key, and once
// the tombstone goes after delete.retention.ms the key must stay gone. In
// "restart" the log comes back with its end below the checkpoint file's
// offset (as after a crash that cost it its un-fsynced tail).
func TestCheckpointLoweredWhenLogEndsBelowIt(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "truncate"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.tcfg.DeleteRetentionMs = 1000
			l := e.log("t")
			ts := e.clock.Now().UnixMilli()
			for _, r := range []batch.KV{kv("k", "old"), kv("x", "1"), kv("y", "1"), kv("z", "1")} {
				e.append(l, batch.NewBatch(0, ts, r))
			}
			l.Roll()
			if res, did := mustRun(t, e.c); !did || res.EndOffset != 4 {
				t.Fatalf("first pass: did=%v %+v", did, res)
			}
			if err := l.TruncateTo(1); err != nil {
				t.Fatal(err)
			}
			if restart {
				e.close()
				e.open()
				l = e.m.Get("t", 0)
				if got := e.c.Checkpoint("t", 0); got != 4 {
					t.Fatalf("checkpoint after restart %d, want the file's 4", got)
				}
			}
			// Appended again (as a follower refetching from its leader)
			// past the old checkpoint before the cleaner looks.
			e.append(l, batch.NewBatch(0, ts+1, kv("x", "2"), kv("k", tomb), kv("y", "2"), kv("z", "2"), kv("w", "1")))
			if l.LogEndOffset() != 6 {
				t.Fatalf("LEO %d", l.LogEndOffset())
			}
			l.Roll()
			res, did := mustRun(t, e.c)
			if !did || res.FirstDirty > 1 || res.EndOffset != 6 {
				t.Fatalf("pass after the truncation: did=%v %+v", did, res)
			}
			recs, _ := readAll(t, l, 0)
			for _, r := range recs {
				if r.key == "k" && r.value != nil {
					t.Fatalf("old value of k kept beside its later tombstone: %+v", recs)
				}
			}
			e.clock.Advance(2 * time.Second)
			mustRun(t, e.c)
			recs, _ = readAll(t, l, 0)
			got := map[string]string{}
			for _, r := range recs {
				v := "<tombstone>"
				if r.value != nil {
					v = *r.value
				}
				got[r.key] = v
			}
			want := map[string]string{"x": "2", "y": "2", "z": "2", "w": "1"}
			if len(got) != len(want) {
				t.Fatalf("after the horizon: %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("after the horizon: %v, want %v", got, want)
				}
			}
			e.close()
		})
	}
}
