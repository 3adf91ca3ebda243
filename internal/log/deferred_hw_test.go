package log

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// crashedLog writes 6 records to a/0, crashes the file system and reopens
// the manager: the log comes back deferred, its offsets unknown.
func crashedLog(t *testing.T) *Log {
	t.Helper()
	e := newEnv(t, DefaultConfig())
	l, err := e.m.Open("a", 0, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 2, 100, int64(i)))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	e.fs.Crash(vfs.CrashOptions{})
	m, err := OpenManager(e.fs, "/data", e.opts())
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	a := m.Get("a", 0)
	if a.Loaded() {
		t.Fatal("log loaded at the start")
	}
	return a
}

// The partition layer's high-watermark calls on a log deferred after an
// unclean shutdown (a restarted broker fenced, then made leader again) do
// not load it; the first reader does, and sees what it would have seen had
// the log been loaded by the calls.
func TestDeferredHighWatermarkKeptForLoad(t *testing.T) {
	t.Run("freeze", func(t *testing.T) {
		a := crashedLog(t)
		a.FreezeHighWatermark()
		a.SetHighWatermark(2)
		if a.Loaded() {
			t.Fatal("FreezeHighWatermark/SetHighWatermark loaded the log")
		}
		if hw := a.HighWatermark(); !a.Loaded() || hw != 6 {
			t.Fatalf("high watermark %d (loaded %v), want 6, the recovered end", hw, a.Loaded())
		}
		mustAppend(t, a, mkBatch(t, 2, 100, 9))
		if hw, leo := a.HighWatermark(), a.LogEndOffset(); hw != 6 || leo != 8 {
			t.Fatalf("after an append: high watermark %d, log end %d; want 6 (frozen), 8", hw, leo)
		}
	})
	t.Run("freeze then follow the end", func(t *testing.T) {
		a := crashedLog(t)
		a.FreezeHighWatermark()
		a.FollowLogEnd()
		if a.Loaded() {
			t.Fatal("FollowLogEnd loaded the log")
		}
		mustAppend(t, a, mkBatch(t, 2, 100, 9))
		if hw := a.HighWatermark(); hw != 8 {
			t.Fatalf("high watermark %d, want 8 (it follows the end)", hw)
		}
	})
	t.Run("forgotten then set", func(t *testing.T) {
		a := crashedLog(t)
		a.FreezeHighWatermark()
		a.ForgetHighWatermark()
		a.SetHighWatermark(4)
		a.SetHighWatermark(3) // never moves back
		if a.Loaded() {
			t.Fatal("ForgetHighWatermark/SetHighWatermark loaded the log")
		}
		if hw := a.HighWatermark(); hw != 4 {
			t.Fatalf("high watermark %d, want 4", hw)
		}
		a.SetHighWatermark(100) // clamped to the end, now that it is loaded
		if hw := a.HighWatermark(); hw != 6 {
			t.Fatalf("high watermark %d, want 6", hw)
		}
	})
}
