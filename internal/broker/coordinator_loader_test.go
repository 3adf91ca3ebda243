package broker

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestOrderedLoader: an event whose try fails runs later, and every event
// after it waits its turn even when its own try would succeed, so loads and
// unloads of a partition never swap.
func TestOrderedLoader(t *testing.T) {
	var l orderedLoader
	var mu sync.Mutex
	var order []string
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	gate := make(chan struct{})
	tried := 0
	l.run(func() bool { record("load-1 now")(); return true }, record("load-1 later"))
	l.run(func() bool { tried++; return false }, func() { <-gate; record("unload-1 later")() })
	l.run(func() bool { tried++; return true }, record("load-1 again later"))
	if tried != 1 {
		t.Fatalf("an event was tried although one before it is queued (%d tries)", tried)
	}
	close(gate)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(order)
		mu.Unlock()
		if len(got) == 3 {
			want := []string{"load-1 now", "unload-1 later", "load-1 again later"}
			if !slices.Equal(got, want) {
				t.Fatalf("order %v, want %v", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued events not run: %v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Drained: the next event is tried at once again.
	deadline = time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		running := l.running
		l.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loader never drained")
		}
		time.Sleep(5 * time.Millisecond)
	}
	now := false
	l.run(func() bool { now = true; return true }, func() { t.Error("ran later although its try succeeded") })
	if !now {
		t.Fatal("an event after the queue drained was not tried at once")
	}
}
