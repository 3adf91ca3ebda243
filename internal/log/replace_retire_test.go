package log

import (
	"errors"
	"strings"
	"testing"
)

// A retire rename that fails during ReplaceSegments (a full disk) must not
// schedule the live path for removal: the cleaned segment is renamed onto
// it, and removing it later would lose that offset range at the next start.
func TestReplaceSurvivesFailedRetireRename(t *testing.T) {
	cfg := DefaultConfig()
	e := newEnv(t, cfg)
	l := e.log()
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 2, 10, e.clock.Now().UnixMilli()))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, mkBatch(t, 1, 10, e.clock.Now().UnixMilli()))
	sw, err := l.NewSegmentWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SegmentBatches(0, func(b []byte) error { return sw.Append(append([]byte(nil), b...)) }); err != nil {
		t.Fatal(err)
	}
	e.fs.SetFault(func(op, name string) error {
		if op == "rename" && strings.HasSuffix(name, "00000000000000000000.log") {
			return errors.New("ENOSPC")
		}
		return nil
	})
	if err := l.ReplaceSegments([]int64{0}, []*SegmentWriter{sw}); err != nil {
		t.Fatalf("ReplaceSegments: %v", err)
	}
	e.fs.SetFault(nil)
	before := len(readAll(t, l, 0))
	e.restart() // Close runs the delayed deletions
	l = e.log()
	if _, err := e.fs.Stat("/data/t-0/00000000000000000000.log"); err != nil {
		t.Errorf("cleaned segment file gone after restart: %v (had %d batches)", err, before)
	}
	got := readAll(t, l, 0)
	if len(got) != before {
		t.Fatalf("batches after restart %d, want %d (log start %d, end %d)", len(got), before, l.LogStartOffset(), l.LogEndOffset())
	}
}
