package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group is the consumer group of the group workload; it consumes the append
// topic.
const Group = "chaos-group"

// GroupMember runs one member of the consumer group after another until ctx
// ends (slot names its static instance id). Each member polls the append
// topic, records what it got (group-poll), and commits the offsets after the
// records it polled (commit: ok = acknowledged). Every 20 to 60 polls it
// goes away in one of three ways: it leaves (commit, then LeaveGroup), it
// dies while committing (the commit is sent, and the client is dropped
// without waiting for the answer nor leaving: with a static instance id the
// group only notices when its session times out), or it just stops (no
// commit). A new member then joins.
func (e *Env) GroupMember(ctx context.Context, slot int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for ctx.Err() == nil {
		proc := e.NextProcess()
		die := rng.IntN(3) == 0
		opts := append(e.baseOpts(),
			kgo.ConsumerGroup(Group),
			kgo.ConsumeTopics(AppendTopic),
			kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(6*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.RebalanceTimeout(10*time.Second),
			kgo.FetchMaxWait(500*time.Millisecond),
			// Rebalances only between a poll and its commit's answer
			// (AllowRebalance): a member never commits a partition already
			// given to another.
			kgo.BlockRebalanceOnPoll(),
		)
		if die {
			// Static membership: closing does not leave the group.
			opts = append(opts, kgo.InstanceID("chaos-member-"+strconv.Itoa(slot)))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			e.Logf("group member: %v", err)
			return
		}
		polls := 20 + rng.IntN(40)
		ok := true
		for i := 0; i < polls && ok && ctx.Err() == nil; i++ {
			wait(ctx, e.PollPause)
			ok = e.groupPoll(ctx, cl, proc, i == polls-1 && die)
			if ok {
				cl.AllowRebalance()
			}
		}
		if ok && !die && rng.IntN(2) == 0 {
			// Leave cleanly after a last commit of what was polled.
			e.commit(cl, proc, false)
		}
		// (a rebalance blocked on the poll would hold Close up)
		cl.AllowRebalance()
		closed := make(chan struct{})
		go func() { cl.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(15 * time.Second):
			e.Logf("group member process %d: client Close still blocked after 15s; going on", proc)
		}
	}
}

// groupPoll polls once and commits what it got. dieCommitting: send the
// commit and return at once (the caller drops the client). False when the
// client must be replaced.
func (e *Env) groupPoll(ctx context.Context, cl *kgo.Client, proc int, dieCommitting bool) bool {
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FGroupPoll, Client: "franz-go"})
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	fs := cl.PollFetches(pctx)
	cancel()
	var errs []string
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			errs = append(errs, t+"/"+strconv.Itoa(int(p))+": "+err.Error())
		}
	})
	ms, _, _ := collect(fs)
	typ, errS := history.OK, ""
	if len(errs) > 0 && len(ms) == 0 {
		typ, errS = history.Fail, errs[0]
	}
	e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FGroupPoll, Client: "franz-go", Value: ms, Error: errS})
	if len(ms) == 0 {
		return true
	}
	return e.commit(cl, proc, dieCommitting)
}

// commit commits the offsets after what cl polled (CommitUncommittedOffsets)
// and records them. abandon: do not wait for the answer (the member dies).
func (e *Env) commit(cl *kgo.Client, proc int, abandon bool) bool {
	offs := cl.UncommittedOffsets()
	if len(offs) == 0 {
		return true
	}
	var ms []history.Mop
	for t, ps := range offs {
		for p, o := range ps {
			ms = append(ms, history.Mop{F: history.MCommit, Key: Key(t, p), Offset: history.I64(o.Offset)})
		}
	}
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FCommit, Client: "franz-go", Value: ms})
	if abandon {
		go cl.CommitOffsetsSync(context.Background(), offs, nil)
		time.Sleep(time.Millisecond)
		e.Rec.Record(history.Op{Process: proc, Type: history.Info, F: history.FCommit, Client: "franz-go", Value: ms, Error: "member died while committing"})
		return false
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	var cerr error
	cl.CommitOffsetsSync(cctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 && cerr == nil {
					cerr = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	})
	cancel()
	typ := history.OK
	if cerr != nil {
		typ = history.Info
	}
	e.Rec.Record(history.Op{Process: proc, Type: typ, F: history.FCommit, Client: "franz-go", Value: ms, Error: errText(cerr)})
	return cerr == nil
}

// GroupOffsets records the group's committed offsets (OffsetFetch through
// the coordinator) every interval until ctx ends.
func (e *Env) GroupOffsets(ctx context.Context, interval time.Duration) {
	proc := e.NextProcess()
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		e.Logf("group offsets: %v", err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		e.ObserveGroupOffsets(ctx, cl, proc, history.FCommitted)
		wait(ctx, interval)
	}
}

// FinalGroupOffsets records the group's committed offsets once, after
// healing (final-committed), retrying for up to 20 s.
func (e *Env) FinalGroupOffsets(ctx context.Context) {
	proc := e.NextProcess()
	cl, err := kgo.NewClient(e.baseOpts()...)
	if err != nil {
		e.Logf("final group offsets: %v", err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		if e.ObserveGroupOffsets(ctx, cl, proc, history.FFinalCommitted) {
			return
		}
		proc = e.NextProcess()
		wait(ctx, 500*time.Millisecond)
	}
}

// ObserveGroupOffsets records one OffsetFetch of the group (f: committed or
// final-committed); false when it failed.
func (e *Env) ObserveGroupOffsets(ctx context.Context, cl *kgo.Client, proc int, f string) bool {
	e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: f})
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(octx, Group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		e.Rec.Record(history.Op{Process: proc, Type: history.Fail, F: f, Error: err.Error()})
		return false
	}
	var ms []history.Mop
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			ms = append(ms, history.Mop{F: history.MCommit, Key: Key(o.Topic, o.Partition), Offset: history.I64(o.At)})
		}
	})
	e.Rec.Record(history.Op{Process: proc, Type: history.OK, F: f, Value: ms})
	return true
}
