package group

import "time"

// Clock is the coordinator's source of time. Tests use a fake whose timers fire only
// when the test advances it.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f on its own goroutine (or, for a fake clock, inside Advance)
	// once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func stopTimer(t Timer) {
	if t != nil {
		t.Stop()
	}
}
