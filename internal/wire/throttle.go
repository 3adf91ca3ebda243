package wire

import (
	"context"
	"time"
)

// Throttle mutes the connection for d from now (KIP-219: a client over its
// quota gets its throttle time in the response and the broker reads
// nothing more from it until the time has passed). A longer mute already
// in place is kept.
func (s *ConnState) Throttle(d time.Duration) {
	if s == nil || d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := s.mutedUntil.Load()
		if cur >= until || s.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// MutedFor returns how long the connection stays muted (0: not muted).
func (s *ConnState) MutedFor() time.Duration {
	if s == nil {
		return 0
	}
	return time.Until(time.Unix(0, s.mutedUntil.Load()))
}

// waitUnmuted holds the read loop while the connection is muted; false
// means the connection is going away.
func (c *conn) waitUnmuted(ctx context.Context) bool {
	for {
		d := c.st.MutedFor()
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
			c.touch() // the muted time is not idleness
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}
