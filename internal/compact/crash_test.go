package compact

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

var errInjected = errors.New("injected crash")

// setupSwap builds a log whose next pass rewrites three segments into one
// group, everything durable.
// With keylessTail the group's last segment holds only keyless records
// (written before the topic became compacted), so the pass empties it and
// the new segment ends with an empty filler batch.
func setupSwap(t *testing.T, keylessTail bool) (*env, *log.Log) {
	e := newEnv(t)
	e.cfg.SegmentBytes = 1 << 20
	e.cfg.Compact = !keylessTail
	l := e.log("swap")
	ts := e.clock.Now().UnixMilli()
	for seg := 0; seg < 3; seg++ {
		for i := 0; i < 4; i++ {
			if keylessTail && seg == 2 {
				e.append(l, batch.NewBatch(0, ts, batch.KV{Value: []byte("no key")}))
				continue
			}
			e.append(l, batch.NewBatch(0, ts, kv(fmt.Sprintf("k%d", i), fmt.Sprintf("%d-%d", seg, i)), kv("t", tomb)))
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	if keylessTail {
		e.cfg.Compact = true
		if err := l.SetConfig(e.cfg); err != nil {
			t.Fatal(err)
		}
	}
	e.append(l, batch.NewBatch(0, ts, kv("active", "x")))
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	return e, l
}

func snapshot(recs []rec) []string {
	var out []string
	for _, r := range recs {
		v := "<nil>"
		if r.value != nil {
			v = *r.value
		}
		out = append(out, fmt.Sprintf("%d:%s=%s@%d", r.off, r.key, v, r.ts))
	}
	return out
}

// A crash (power loss) injected at every filesystem operation of a pass:
// after recovery the log reads exactly as before the pass or exactly as
// after it — never a mix, never a loss — and a new pass then finishes.
func TestCrashAtEveryStepOfTheSwap(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testCrashAtEveryStep(t, false) })
	t.Run("emptied-tail", func(t *testing.T) { testCrashAtEveryStep(t, true) })
}

func testCrashAtEveryStep(t *testing.T, keylessTail bool) {
	e, l := setupSwap(t, keylessTail)
	before, _ := readAll(t, l, 0)
	ops := 0
	e.fs.SetFault(func(op, name string) error { ops++; return nil })
	if _, did := mustRun(t, e.c); !did {
		t.Fatal("no pass")
	}
	e.fs.SetFault(nil)
	after, _ := readAll(t, l, 0)
	if reflect.DeepEqual(snapshot(before), snapshot(after)) {
		t.Fatal("the pass changed nothing")
	}
	if _, hdrs := readAll(t, l, 0); keylessTail && hdrs[len(hdrs)-2].RecordCount != 0 {
		t.Fatalf("no filler batch before the active segment: %+v", hdrs[len(hdrs)-2])
	}
	if ops < 10 {
		t.Fatalf("only %d filesystem operations in a pass", ops)
	}
	want := map[string]bool{fmt.Sprint(snapshot(before)): true, fmt.Sprint(snapshot(after)): true}
	sawNew, sawOld := false, false
	for step := 1; step <= ops+1; step++ {
		e, l := setupSwap(t, keylessTail)
		n := 0
		e.fs.SetFault(func(op, name string) error {
			n++
			if n >= step {
				return errInjected
			}
			return nil
		})
		_, _, _ = e.c.RunOnce() // fails at the injected step (or completes)
		e.fs.SetFault(nil)
		e.crash()
		l = e.m.Get("swap", 0)
		if l == nil {
			t.Fatalf("step %d: partition lost", step)
		}
		got, _ := readAll(t, l, 0)
		s := fmt.Sprint(snapshot(got))
		if !want[s] {
			t.Fatalf("crash at step %d/%d: log reads\n%v\nwant before\n%v\nor after\n%v", step, ops, snapshot(got), snapshot(before), snapshot(after))
		}
		if s == fmt.Sprint(snapshot(after)) {
			sawNew = true
		} else {
			sawOld = true
		}
		// The cleaner finishes the job after recovery.
		for i := 0; i < 3; i++ {
			if _, err := e.c.CleanNow("swap", 0); err != nil {
				t.Fatalf("step %d: pass after recovery: %v", step, err)
			}
		}
		final, _ := readAll(t, l, 0)
		if fmt.Sprint(snapshot(final)) != fmt.Sprint(snapshot(after)) {
			t.Fatalf("step %d: after recovery and a pass\n%v\nwant\n%v", step, snapshot(final), snapshot(after))
		}
	}
	if !sawNew || !sawOld {
		t.Fatalf("crash points saw old=%v new=%v; want both", sawOld, sawNew)
	}
}
