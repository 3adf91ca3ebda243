package log

import "testing"

// The high watermark is kept apart from the log end offset: once the
// partition layer sets it, reads stop there; it never moves back except by
// truncation; FollowLogEnd makes it the end again.
func TestHighWatermarkApartFromLogEnd(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	mustAppend(t, l, mkBatch(t, 3, 10, 1)) // 0..2
	if l.HighWatermark() != 3 {
		t.Fatalf("a new log's high watermark follows its end: %d", l.HighWatermark())
	}
	l.SetHighWatermark(3)
	mustAppend(t, l, mkBatch(t, 2, 10, 1)) // 3..4
	if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != 3 || leo != 5 {
		t.Fatalf("hw %d leo %d, want 3 5", hw, leo)
	}
	res, err := l.Read(0, 1<<20, true)
	if err != nil || res.NextOffset != 3 || res.HighWatermark != 3 || res.LogEndOffset != 5 {
		t.Fatalf("read past the high watermark: next %d hw %d leo %d err %v", res.NextOffset, res.HighWatermark, res.LogEndOffset, err)
	}
	if res, err := l.Read(3, 1<<20, true); err != nil || res.Size != 0 {
		t.Fatalf("read at the high watermark returned %d bytes, err %v", res.Size, err)
	}
	if res, err := l.Read(5, 1<<20, true); err != nil || res.Size != 0 {
		t.Fatalf("read at the log end: %d bytes, err %v", res.Size, err)
	}
	if _, err := l.Read(6, 1<<20, true); err == nil {
		t.Fatal("read past the log end is not out of range")
	}
	if lso := l.LastStableOffset(); lso != 3 {
		t.Fatalf("last stable offset %d above the high watermark 3", lso)
	}
	l.SetHighWatermark(2) // never backwards
	l.SetHighWatermark(99)
	if hw := l.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d, want it clamped to the end 5", hw)
	}
	ch := l.Wait()
	if err := l.TruncateTo(3); err != nil { // drops the batch 3..4
		t.Fatal(err)
	}
	<-ch
	if hw := l.HighWatermark(); hw != 3 {
		t.Fatalf("after truncating to 3 the high watermark is %d", hw)
	}
	mustAppend(t, l, mkBatch(t, 2, 10, 1)) // 3..4
	if hw := l.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark moved with an append: %d", hw)
	}
	ch = l.Wait()
	l.FollowLogEnd()
	<-ch // waiting fetches wake when the high watermark jumps
	if hw := l.HighWatermark(); hw != 5 {
		t.Fatalf("following the end again: %d", hw)
	}
}
