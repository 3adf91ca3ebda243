package replica

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The low watermark (DeleteRecords, Kafka's lowWatermarkIfLeader): the
// smallest log start offset over the leader and its live followers. A
// follower takes the leader's log start offset from its fetch answers
// (FollowLogStart) and reports its own in the log_start_offset of its next
// Fetch; DeleteRecords answers once the low watermark has reached the
// offset asked for, so that its low_watermark means the records are gone
// from every live replica, as in Kafka.

// NoteReplicaLogStart records the log start offset a follower's fetch
// reported (a Fetch's log_start_offset), in this leadership.
func (p *Partition) NoteReplicaLogStart(replica int32, logStart int64) {
	st := p.st.Load()
	if st.Leader != p.self {
		return
	}
	p.lv.mu.Lock()
	defer p.lv.mu.Unlock()
	if p.lv.epoch != st.LeaderEpoch || p.lv.followers == nil {
		return
	}
	f := p.lv.followers[replica]
	if f == nil {
		f = &followerState{leo: -1, logStart: -1}
		p.lv.followers[replica] = f
	}
	f.logStart = logStart
}

// LowWatermark is the smallest log start offset over this leader and the
// followers live reports live (-1 for a live follower not heard from in
// this leadership), or -1 when this broker does not lead.
func (p *Partition) LowWatermark(live func(int32) bool) int64 {
	st := p.st.Load()
	if st.Leader != p.self {
		return -1
	}
	low := p.log.LogStartOffset()
	p.lv.mu.Lock()
	defer p.lv.mu.Unlock()
	for _, r := range st.Replicas {
		if r == p.self || !live(r) {
			continue
		}
		ls := int64(-1)
		if f := p.lv.followers[r]; f != nil && p.lv.epoch == st.LeaderEpoch {
			ls = f.logStart
		}
		low = min(low, ls)
	}
	return low
}

// WaitLowWatermark waits until LowWatermark reaches offset (DeleteRecords'
// purgatory) and returns it: NOT_LEADER_OR_FOLLOWER when this broker stops
// leading, REQUEST_TIMED_OUT when ctx ends first.
func (p *Partition) WaitLowWatermark(ctx context.Context, offset int64, live func(int32) bool) (int64, error) {
	tick := time.NewTicker(20 * time.Millisecond) // followers' fetches do not signal the log
	defer tick.Stop()
	for {
		if p.st.Load().Leader != p.self {
			return -1, &Error{Code: kerr.NotLeaderForPartition.Code, Msg: "this broker is no longer the leader of " + p.String()}
		}
		if low := p.LowWatermark(live); low >= offset {
			return low, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return -1, &Error{Code: kerr.RequestTimedOut.Code,
				Msg: "the replicas of " + p.String() + " did not delete the records in time"}
		}
	}
}
