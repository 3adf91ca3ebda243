package replica

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// Replication, Kafka's way. The leader serves its followers' fetches from
// the log end (ReadForReplica), learns from each fetch offset how far that
// follower's log reaches, and sets the high watermark to the minimum log end
// offset over the in-sync set. acks=all producers wait (WaitReplicated)
// until the high watermark passes their records. The leader proposes
// in-sync set changes (ISRChange): a follower that has not caught up for
// replica.lag.time.max.ms leaves it, one that reached the high watermark
// joins it; the controller decides, and the new set comes back as a State.
// A follower appends the leader's batches as they are (AppendAsFollower)
// and takes the leader's high watermark, capped at its own log end.

// followerState is the leader's view of one follower's log.
type followerState struct {
	leo       int64     // the follower has every record below this (its fetch offset)
	logStart  int64     // the follower's log start offset, as its last fetch said (-1: unknown; low_watermark.go)
	caughtUp  time.Time // last time its log reached the leader's end
	prevLEO   int64     // the leader's log end at the follower's previous fetch
	prevFetch time.Time
}

// leaderView is the leader-side replication state of one leadership (reset
// whenever the leader epoch changes).
type leaderView struct {
	mu    sync.Mutex
	epoch int32
	since time.Time // when this broker became leader in epoch
	// startOff is the log end when it did (the epoch's first offset), read
	// when first needed (epochStart: the leadership's first append, a
	// follower considered for the in-sync set, or ListOffsets asking
	// whether the high watermark is known; -1 until then): becoming leader
	// does not read the log, which after an unclean start is recovered on
	// its first use. Read before any append of the leadership it is the
	// epoch's first offset (Kafka's leaderEpochStartOffset).
	startOff  int64
	startSet  atomic.Bool // startOff is known
	followers map[int32]*followerState
}

// resetLeaderView starts a leadership: followers unknown, each given a full
// replica.lag.time.max.ms from now before it can be dropped from the
// in-sync set.
// epochStart returns startOff, reading the log end the first time it is
// needed; lv.mu must be held.
func (lv *leaderView) epochStart(l *log.Log) int64 {
	if lv.startOff < 0 {
		lv.startOff = l.LogEndOffset()
		lv.startSet.Store(true)
	}
	return lv.startOff
}

// noteEpochStart reads the leadership's first offset before its first
// append (AppendAsLeader), if nothing has yet.
func (p *Partition) noteEpochStart(st *State) {
	p.lv.mu.Lock()
	if p.lv.epoch == st.LeaderEpoch && p.lv.followers != nil {
		p.lv.epochStart(p.log)
	}
	p.lv.mu.Unlock()
}

func (p *Partition) resetLeaderView(st *State, now time.Time) {
	p.lv.mu.Lock()
	p.lv.epoch = st.LeaderEpoch
	p.lv.since = now
	p.lv.startOff = -1
	p.lv.startSet.Store(false)
	p.lv.followers = map[int32]*followerState{}
	p.lv.mu.Unlock()
}

// ReadForReplica serves follower replica's fetch at offset: it records that
// the follower holds everything below offset (which may move the high
// watermark), then reads from the log up to its end.
func (p *Partition) ReadForReplica(replica int32, offset int64, maxBytes int, minOneBatch bool, now time.Time) (log.ReadResult, error) {
	st := p.st.Load()
	if st.Leader != p.self {
		return log.ReadResult{}, &Error{Code: kerr.NotLeaderForPartition.Code, Msg: "this broker is not the leader of " + p.String()}
	}
	if !slices.Contains(st.Replicas, replica) {
		return log.ReadResult{}, &Error{Code: kerr.NotLeaderForPartition.Code,
			Msg: "broker " + itoa(replica) + " is not a replica of " + p.String()}
	}
	p.recordFollower(st, replica, offset, now)
	return p.log.ReadToEnd(offset, maxBytes, minOneBatch)
}

// recordFollower notes a follower's fetch offset and moves the high
// watermark if the in-sync set now holds more.
func (p *Partition) recordFollower(st *State, replica int32, offset int64, now time.Time) {
	leo := p.log.LogEndOffset()
	p.lv.mu.Lock()
	if p.lv.epoch != st.LeaderEpoch || p.lv.followers == nil {
		p.lv.mu.Unlock()
		return
	}
	f := p.lv.followers[replica]
	if f == nil {
		f = &followerState{leo: -1, logStart: -1}
		p.lv.followers[replica] = f
	}
	// Kafka's rule for "caught up": the fetch reaches the leader's end now,
	// or reaches the end the leader had at the follower's previous fetch
	// (then it was caught up at that time).
	switch {
	case offset >= leo:
		f.caughtUp = now
	case offset >= f.prevLEO && !f.prevFetch.IsZero():
		f.caughtUp = f.prevFetch
	}
	f.leo = min(offset, leo)
	f.prevLEO, f.prevFetch = leo, now
	p.lv.mu.Unlock()
	p.updateHighWatermark(st)
}

// updateHighWatermark sets the high watermark to the minimum log end
// offset over the in-sync set (a member not heard from in this leadership
// holds it where it is).
func (p *Partition) updateHighWatermark(st *State) {
	if st.Leader != p.self || len(st.ISR) <= 1 {
		return // alone in the in-sync set: the high watermark follows the end
	}
	if underMinISR(st) {
		return // KIP-966: held while the in-sync set is too small
	}
	// (The followers first: a leader none of whose followers has fetched
	// yet, e.g. just elected, leaves a log not yet recovered unloaded.)
	hw := int64(math.MaxInt64)
	p.lv.mu.Lock()
	for _, r := range st.ISR {
		if r == p.self {
			continue
		}
		f := p.lv.followers[r]
		if f == nil || f.leo < 0 {
			p.lv.mu.Unlock()
			return
		}
		hw = min(hw, f.leo)
	}
	p.lv.mu.Unlock()
	p.log.SetHighWatermark(min(hw, p.log.LogEndOffset()))
}

// underMinISR reports whether st's in-sync set is smaller than its MinISR:
// then the high watermark does not advance, as Kafka's leader does with
// eligible leader replicas (KIP-966: a replica that left the in-sync set in
// that state stays an eligible leader, so nothing it lacks may become
// visible or count as committed, whatever the producer's acks).
func underMinISR(st *State) bool { return st.MinISR > 0 && len(st.ISR) < st.MinISR }

// ISRChange returns the in-sync set this leader should propose, and
// whether it differs from the current one: followers that have not caught
// up within lagMax leave it (this broker stays), replicas whose log reached
// the high watermark (and this leadership's first offset) join it.
func (p *Partition) ISRChange(now time.Time, lagMax time.Duration) ([]int32, bool) {
	st := p.st.Load()
	if st.Leader != p.self {
		return nil, false
	}
	hw := p.log.HighWatermark()
	p.lv.mu.Lock()
	defer p.lv.mu.Unlock()
	if p.lv.epoch != st.LeaderEpoch || p.lv.followers == nil {
		return nil, false
	}
	var isr []int32
	changed := false
	for _, r := range st.Replicas {
		in := slices.Contains(st.ISR, r)
		f := p.lv.followers[r]
		switch {
		case r == p.self:
			if !in {
				changed = true // a leader is always in its in-sync set
			}
			isr = append(isr, r)
		case in:
			caught := p.lv.since
			if f != nil && f.caughtUp.After(caught) {
				caught = f.caughtUp
			}
			if now.Sub(caught) > lagMax {
				changed = true
				continue
			}
			isr = append(isr, r)
		default:
			if f != nil && f.leo >= hw && f.leo >= p.lv.epochStart(p.log) {
				changed = true
				isr = append(isr, r)
			}
		}
	}
	return isr, changed
}

// WaitReplicated waits until the high watermark reaches offset (acks=all):
// nil once it does with at least minISR in-sync replicas;
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the in-sync set shrank below
// minISR; NOT_LEADER_OR_FOLLOWER when this broker lost the leadership of
// epoch; REQUEST_TIMED_OUT when ctx ends first.
func (p *Partition) WaitReplicated(ctx context.Context, epoch int32, offset int64, minISR int) error {
	tick := time.NewTicker(50 * time.Millisecond) // a leadership change does not signal the log
	defer tick.Stop()
	for {
		ch := p.log.Wait()
		st := p.st.Load()
		if st.Leader != p.self || st.LeaderEpoch != epoch {
			return &Error{Code: kerr.NotLeaderForPartition.Code, Msg: "leadership of " + p.String() + " moved before the records were replicated"}
		}
		if p.log.HighWatermark() >= offset {
			if len(st.ISR) < minISR {
				return &Error{Code: kerr.NotEnoughReplicasAfterAppend.Code, Msg: notEnoughReplicas(p, len(st.ISR), minISR)}
			}
			return nil
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return &Error{Code: kerr.RequestTimedOut.Code, Msg: "the in-sync replicas of " + p.String() + " did not acknowledge in time"}
		}
	}
}

// NeedsReplication reports whether an acks=all append must wait for other
// replicas (the in-sync set is more than this leader).
func (p *Partition) NeedsReplication() bool {
	st := p.st.Load()
	return st.Leader == p.self && len(st.ISR) > 1
}

// AppendAsFollower appends the leader's batches verbatim (offsets, epochs).
func (p *Partition) AppendAsFollower(records []byte) (log.FollowerAppendResult, error) {
	return p.log.AppendAsFollower(records, log.FollowerAppendOptions{})
}

// FetchPosition is the offset this follower asks its leader for next: its
// log end offset, which the leader takes as how far this replica holds the
// log (it moves the high watermark, and so acknowledges acks=all writes).
// Before answering it makes durable what flush.messages asked to be (with
// flush.messages=1: every record below it), so that a position reported to
// the leader is never lost by a power loss that flush.messages was meant
// to survive; an error (the log failed) means no position may be reported.
func (p *Partition) FetchPosition() (int64, error) {
	return p.log.SyncedEnd()
}

// FollowHighWatermark takes the leader's high watermark, capped at this
// follower's log end.
func (p *Partition) FollowHighWatermark(hw int64) {
	p.log.SetHighWatermark(min(hw, p.log.LogEndOffset()))
}

// TruncateTo drops this follower's records at or after offset (its log
// diverged from the leader's).
func (p *Partition) TruncateTo(offset int64) error { return p.log.TruncateTo(offset) }

// FollowLogStart takes the leader's log start offset (retention,
// DeleteRecords): records below it go here too; a log that ends below it
// restarts, empty, at it.
func (p *Partition) FollowLogStart(start int64) error {
	switch {
	case start <= p.log.LogStartOffset():
		return nil
	case start > p.log.LogEndOffset():
		return p.log.TruncateFullyAndStartAt(start)
	}
	return p.log.TruncatePrefix(start)
}

// LatestEpoch is the newest leader epoch in this replica's log (-1: none).
func (p *Partition) LatestEpoch() int32 { return p.log.LatestEpoch() }

// ReadBytesToEnd returns whole batches from offset up to the log end (a
// coordinator loading its partition: as the new leader, its whole log is
// what it serves from now on, above a high watermark it has not learnt yet
// too).
func (p *Partition) ReadBytesToEnd(offset int64, maxBytes int) ([]byte, error) {
	r, err := p.log.ReadToEnd(offset, maxBytes, true)
	if err != nil {
		return nil, err
	}
	return r.Bytes()
}

// testHookAppended, when set by a test, runs in AppendReplicated between
// the append and the replication check.
var testHookAppended func()

// AppendReplicated appends a coordinator's records as leader and, when
// other replicas are in the in-sync set, waits (up to timeout) until they
// hold them, as Kafka's coordinators write with acks=all.
func (p *Partition) AppendReplicated(records []byte, opts log.AppendOptions, timeout time.Duration) (log.AppendResult, error) {
	epoch := p.LeaderEpoch()
	res, err := p.AppendAsLeader(records, opts, 0)
	if err != nil {
		return res, err
	}
	if testHookAppended != nil {
		testHookAppended()
	}
	if !p.NeedsReplication() {
		// The in-sync set is this leader alone, or the leadership moved
		// right after the append (the records may then be truncated by
		// the next leader: not acknowledged).
		if code := p.CheckLeader(epoch); code != 0 {
			return res, &Error{Code: kerr.NotLeaderForPartition.Code, Msg: "leadership of " + p.String() + " moved before the records were replicated"}
		}
		return res, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return res, p.WaitReplicated(ctx, epoch, res.LastOffset+1, 1)
}
