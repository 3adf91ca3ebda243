package gopool

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// poll waits up to 5 s for cond.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not before the deadline", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPoolRunsEveryTaskConcurrently(t *testing.T) {
	var sum atomic.Int64
	var wg sync.WaitGroup
	release := make(chan struct{})
	var started atomic.Int32
	p := New(4, nil, func(n int) {
		defer wg.Done()
		started.Add(1)
		<-release // every task blocks until all have started: none waits for another
		sum.Add(int64(n))
	})
	wg.Add(100)
	for i := 1; i <= 100; i++ {
		p.Go(i)
	}
	poll(t, "all 100 tasks started", func() bool { return started.Load() == 100 })
	close(release)
	wg.Wait()
	if sum.Load() != 5050 {
		t.Fatalf("sum %d, want 5050", sum.Load())
	}
	// 100 goroutines ran; 4 stay.
	poll(t, "4 goroutines waiting", func() bool { return p.Idle() == 4 })
}

func TestPoolReusesWaitingGoroutines(t *testing.T) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	block := make(chan struct{})
	var started atomic.Int32
	p := New(3, done, func(wait bool) {
		defer wg.Done()
		if wait {
			started.Add(1)
			<-block
		}
	})
	wg.Add(3)
	for range 3 {
		p.Go(false)
	}
	wg.Wait()
	poll(t, "3 goroutines waiting", func() bool { return p.Idle() == 3 })
	// A task given to a waiting goroutine takes it out of the waiting ones
	// before it runs; one on a new goroutine would not.
	wg.Add(3)
	for range 3 {
		p.Go(true)
	}
	poll(t, "the tasks to start", func() bool { return started.Load() == 3 })
	if p.Idle() == 3 {
		t.Fatal("no task ran on a waiting goroutine")
	}
	close(block)
	wg.Wait()
	close(done)
	poll(t, "the waiting goroutines to end", func() bool { return p.Idle() == 0 })
}
