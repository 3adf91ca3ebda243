package compact

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// The last pass survives a restart (clean shutdown and power loss after the
// pass), and the status says when the active segment rolls.
func TestPassStateSurvivesRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		e := newEnv(t)
		l := e.log("users")
		ts := e.clock.Now().UnixMilli()
		e.append(l, batch.NewBatch(0, ts, kv("a", "1"), kv("a", "2"), kv("b", "1")))
		l.Roll()
		e.append(l, batch.NewBatch(0, ts, kv("c", "1")))
		res, did := mustRun(t, e.c)
		if !did {
			t.Fatal("no pass")
		}
		passAt := e.clock.Now().UnixMilli()
		before := e.c.Status("users").Partitions[0]
		if before.LastPassMs != passAt || before.Passes != 1 {
			t.Fatalf("before restart: %+v", before)
		}
		e.clock.Advance(time.Minute)
		if err := l.Flush(); err != nil { // the active segment's record survives the crash
			t.Fatal(err)
		}
		if crash {
			e.crash()
		} else {
			e.close()
			e.open()
		}
		ps := e.c.Status("users").Partitions[0]
		if ps.LastPassMs != passAt || ps.Passes != 1 || ps.LastPassBytesRead != res.BytesRead ||
			ps.LastPassBytesWritten != res.BytesWritten || ps.LastPassDurationMs != res.Duration.Milliseconds() {
			t.Fatalf("crash=%v: after restart %+v, pass %+v", crash, ps, res)
		}
		// segment.ms is the default 7 days; the active segment (created before
		// the restart, at the first append) rolls 7 days after it was created.
		if ps.ActiveSegmentRollBy != "segment.ms" || ps.ActiveSegmentRollMs <= ps.LastPassMs ||
			ps.SegmentBytes != e.cfg.SegmentBytes {
			t.Fatalf("roll: %+v", ps)
		}
		var out bytes.Buffer
		WriteStatus(&out, e.c.Status("users"))
		for _, want := range []string{" 1m0s ago ", "active segment rolls in 6d", "(segment.ms) or at 4.0KiB (segment.bytes)", "(1 pass)"} {
			want = strings.Replace(want, "6d", "167h", 1) // durations print in hours
			if !strings.Contains(out.String(), want) {
				t.Fatalf("crash=%v: status lacks %q:\n%s", crash, want, out.String())
			}
		}
		if strings.Contains(out.String(), "never") {
			t.Fatalf("status says never:\n%s", out.String())
		}
		e.close()
	}
}

// max.compaction.lag.ms shorter than segment.ms decides the roll; an empty
// active segment has no roll time.
func TestStatusRollTime(t *testing.T) {
	e := newEnv(t)
	e.tcfg.MaxCompactionLagMs = 60_000
	l := e.log("t")
	if ps := e.c.Status("t").Partitions[0]; ps.ActiveSegmentRollMs != 0 {
		t.Fatalf("empty active segment: %+v", ps)
	}
	var out bytes.Buffer
	WriteStatus(&out, e.c.Status("t"))
	if !strings.Contains(out.String(), "active segment empty: it rolls segment.ms after its first append or at 4.0KiB (segment.bytes)") {
		t.Fatalf("empty:\n%s", out.String())
	}
	now := e.clock.Now().UnixMilli()
	e.append(l, batch.NewBatch(0, now, kv("a", "1")))
	ps := e.c.Status("t").Partitions[0]
	if ps.ActiveSegmentRollBy != "max.compaction.lag.ms" || ps.ActiveSegmentRollMs < now+60_000 || ps.ActiveSegmentRollMs > now+60_001 {
		t.Fatalf("roll %d by %s, now %d", ps.ActiveSegmentRollMs, ps.ActiveSegmentRollBy, now)
	}
}

// A damaged pass-state file loses history only.
func TestPassStateUnreadable(t *testing.T) {
	e := newEnv(t)
	l := e.log("users")
	e.append(l, batch.NewBatch(0, e.clock.Now().UnixMilli(), kv("a", "1"), kv("a", "2")))
	l.Roll()
	mustRun(t, e.c)
	e.close()
	if err := vfs.WriteFileAtomic(e.fs, "/data/"+PassStateFile, []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.open()
	if ps := e.c.Status("users").Partitions[0]; ps.LastPassMs != 0 || ps.Checkpoint < 0 {
		t.Fatalf("after a bad file: %+v", ps)
	}
	for _, bad := range []string{`{"version":2,"partitions":[]}`, `{"version":1,"partitions":[{"topic":"","partition":0}]}`,
		`{"version":1,"partitions":[{"topic":"x","partition":-1}]}`} {
		if _, err := parsePassState([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	e.close()
}
