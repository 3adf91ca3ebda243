// Package gopool runs short tasks on goroutines it keeps for the next task.
//
// A new goroutine starts with a small stack. A task whose call chain is
// deeper than that (a fetch or a partition's append goes through the wire,
// the broker, the replica and the log) grows the stack, and growing copies it:
// with a new goroutine per task that copy was 5–12 % of the CPU of small
// fetches and of produce requests spread over many partitions. A goroutine
// that has run a task keeps its grown stack for the next one.
package gopool

import "sync/atomic"

// Pool runs run(t) for each t given to Go, on a goroutine that has run an
// earlier task and waits for the next one, or else on a new goroutine. Go
// never waits: tasks run concurrently as with a go statement. At most
// maxIdle goroutines wait for a task; once done is closed (a nil done is
// never closed) they end.
type Pool[T any] struct {
	run     func(T)
	handoff chan T // unbuffered: an idle goroutine takes the task
	idle    atomic.Int32
	maxIdle int32
	done    <-chan struct{}
}

// New returns a Pool that runs run, keeping at most maxIdle goroutines
// waiting until done is closed.
func New[T any](maxIdle int, done <-chan struct{}, run func(T)) *Pool[T] {
	return &Pool[T]{run: run, handoff: make(chan T), maxIdle: int32(maxIdle), done: done}
}

// Go runs run(t) on a waiting goroutine of p, or on a new one.
func (p *Pool[T]) Go(t T) {
	select {
	case p.handoff <- t:
	default:
		go p.worker(t)
	}
}

// Idle is the number of goroutines waiting for a task.
func (p *Pool[T]) Idle() int { return int(p.idle.Load()) }

func (p *Pool[T]) worker(t T) {
	var zero T
	for {
		p.run(t)
		t = zero // a waiting goroutine keeps nothing of its last task alive
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case t = <-p.handoff:
			p.idle.Add(-1)
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}
