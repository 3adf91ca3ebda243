package producer

import (
	"bytes"
	"math/rand/v2"
	"path"
	"slices"
	"sort"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// The producer state of a follower (log.AppendAsFollower): it learns of the
// leader's batches without judging them, so that after it becomes leader
// it recognises retries and tracks the open transactions exactly as the
// old leader would have.

// smallSegments rolls every few batches, so that transactions and their
// .txnindex entries span segments.
func smallSegments() log.Config {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 200
	return cfg
}

// leaderBatches returns the leader's stored batches with base offsets in
// [from, to), as a follower's fetch gets them.
func leaderBatches(t *testing.T, l *log.Log, from, to int64) []byte {
	t.Helper()
	if from >= l.LogEndOffset() {
		return nil
	}
	data, err := l.ReadBytes(from, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < len(data) {
		h, err := batch.ParseHeader(data[n:])
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset >= to {
			break
		}
		n += h.TotalSize()
	}
	return data[:n]
}

func (e *txnEnv) follow(b []byte) log.FollowerAppendResult {
	e.t.Helper()
	r, err := e.l.AppendAsFollower(b, log.FollowerAppendOptions{})
	if err != nil {
		e.t.Fatalf("AppendAsFollower: %v", err)
	}
	return r
}

// catchUp appends to the follower, in chunks of up to maxBatches batches,
// everything the leader has past the follower's end.
func catchUp(t *testing.T, leader, follower *txnEnv, r *rand.Rand, maxBatches int) {
	t.Helper()
	data := leaderBatches(t, leader.l, follower.l.LogEndOffset(), leader.l.LogEndOffset())
	if len(data) == 0 {
		return
	}
	bs, err := batch.Split(data)
	if err != nil {
		t.Fatal(err)
	}
	for len(bs) > 0 {
		n := min(len(bs), 1+r.IntN(maxBatches))
		follower.follow(slices.Concat(bs[:n]...))
		bs = bs[n:]
	}
}

func sortedProducers(s *State) []ProducerInfo {
	ps := s.Producers()
	sort.Slice(ps, func(i, j int) bool { return ps[i].ProducerID < ps[j].ProducerID })
	return ps
}

// sameProducerState compares what a fetch, a retry and a marker depend on.
func sameProducerState(t *testing.T, what string, leader, follower *txnEnv) {
	t.Helper()
	if l, f := leader.l.LastStableOffset(), follower.l.LastStableOffset(); l != f {
		t.Fatalf("%s: LSO leader %d, follower %d", what, l, f)
	}
	if l, f := leader.l.AllAbortedTxns(), follower.l.AllAbortedTxns(); !slices.Equal(l, f) {
		t.Fatalf("%s: aborted txns\nleader   %+v\nfollower %+v", what, l, f)
	}
	if l, f := leader.st.OngoingTxns(), follower.st.OngoingTxns(); len(l) != len(f) {
		t.Fatalf("%s: ongoing leader %v, follower %v", what, l, f)
	} else {
		for id, off := range l {
			if f[id] != off {
				t.Fatalf("%s: ongoing leader %v, follower %v", what, l, f)
			}
		}
	}
	if l, f := sortedProducers(leader.st), sortedProducers(follower.st); !slices.Equal(l, f) {
		t.Fatalf("%s: producers\nleader   %+v\nfollower %+v", what, l, f)
	}
}

// followerWorkload appends to the leader: transactions of three producers
// committed or aborted (some aborts bump the producer epoch, as a
// coordinator's timeout abort does), an idempotent producer outside
// transactions, a coordinator's transactional offset commits, and a
// partition leader epoch that grows. after runs after each append.
func followerWorkload(t *testing.T, leader *txnEnv, r *rand.Rand, steps int, after func()) {
	t.Helper()
	seqs := map[int64]int32{}
	epochs := map[int64]int16{}
	open := map[int64]bool{}
	leaderEpoch := int32(0)
	for i := 0; i < steps; i++ {
		if r.IntN(20) == 0 {
			leaderEpoch++
		}
		opts := log.AppendOptions{LeaderEpoch: leaderEpoch}
		pid := int64(1 + r.IntN(3))
		switch k := r.IntN(10); {
		case k == 0:
			pid = 20 // a coordinator's offset commit opens its transaction
			if open[pid] && r.IntN(2) == 0 {
				opts.AllowControl = true
				leader.append(marker(pid, epochs[pid], batch.ControlCommit), opts)
				open[pid] = false
				break
			}
			opts.Coordinator = true
			leader.append(coordBatch(t, pid, epochs[pid]), opts)
			open[pid] = true
		case k < 3:
			n := 1 + r.IntN(3)
			leader.append(idempotentBatch(t, 50, 0, seqs[50], n), opts)
			seqs[50] += int32(n)
		case open[pid] && k < 6:
			typ, epoch := batch.ControlCommit, epochs[pid]
			if r.IntN(2) == 0 {
				typ = batch.ControlAbort
				if r.IntN(2) == 0 {
					epoch++ // the coordinator fenced the producer: it goes on at epoch+1, sequence 0
					epochs[pid], seqs[pid] = epoch, 0
				}
			}
			opts.AllowControl = true
			leader.append(marker(pid, epoch, typ), opts)
			open[pid] = false
		default:
			n := 1 + r.IntN(3)
			leader.append(txnBatch(t, pid, epochs[pid], seqs[pid], n), opts)
			seqs[pid] += int32(n)
			open[pid] = true
		}
		after()
	}
}

func partitionFiles(t *testing.T, fs *vfs.MemFS, dir string) map[string][]byte {
	t.Helper()
	ents, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := fs.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// A follower replicating every leader append as it happens, and one
// catching up in chunks of many batches (several markers and transactions
// per append), end with the leader's producer state: the same last stable
// offset at every step, the same aborted transactions (with the same last
// stable offsets recorded in .txnindex), ongoing transactions and producer
// windows; the step-by-step follower's files are the leader's byte for
// byte, .txnindex included.
func TestFollowerProducerStateMatchesLeader(t *testing.T) {
	for seed := uint64(0); seed < 8; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		leader := openTxnEnvCfg(t, vfs.NewMemFS(), smallSegments())
		step := openTxnEnvCfg(t, vfs.NewMemFS(), smallSegments())
		chunked := openTxnEnvCfg(t, vfs.NewMemFS(), smallSegments())
		i := 0
		followerWorkload(t, leader, r, 150, func() {
			i++
			catchUp(t, leader, step, r, 1)
			sameProducerState(t, "step by step", leader, step)
			if i%17 == 0 {
				catchUp(t, leader, chunked, r, 12)
				sameProducerState(t, "chunked", leader, chunked)
			}
		})
		catchUp(t, leader, chunked, r, 40)
		sameProducerState(t, "chunked, at the end", leader, chunked)
		if len(leader.l.AllAbortedTxns()) < 3 || len(leader.l.Segments()) < 5 {
			t.Fatalf("seed %d: workload too small: %d aborted, %d segments", seed, len(leader.l.AllAbortedTxns()), len(leader.l.Segments()))
		}
		for _, e := range []*txnEnv{leader, step, chunked} {
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
		}
		lf, sf := partitionFiles(t, leader.fs, leader.l.Dir()), partitionFiles(t, step.fs, step.l.Dir())
		if len(lf) != len(sf) {
			t.Fatalf("seed %d: leader has %d files, follower %d", seed, len(lf), len(sf))
		}
		txnIndexes := 0
		for name, b := range lf {
			if !bytes.Equal(sf[name], b) {
				t.Fatalf("seed %d: %s differs", seed, name)
			}
			if path.Ext(name) == ".txnindex" {
				txnIndexes++
			}
		}
		if txnIndexes == 0 {
			t.Fatalf("seed %d: no .txnindex compared", seed)
		}
	}
}

// After a follower becomes leader, an idempotent producer's retry of a
// batch the old leader wrote is a duplicate answered with the original
// offsets, the sequence continues where the old leader's did, an old
// epoch is fenced, and an open transaction holds the last stable offset
// and ends with the new leader's marker. It holds after a restart or a
// crash of the follower too (the state rebuilt from its log).
func TestFollowerBecomesLeader(t *testing.T) {
	for _, how := range []string{"live", "restart", "crash"} {
		t.Run(how, func(t *testing.T) {
			leader := openTxnEnv(t, vfs.NewMemFS())
			ffs := vfs.NewMemFS()
			follower := openTxnEnv(t, ffs)
			r := rand.New(rand.NewPCG(1, 1))

			var orig []log.AppendResult // of producer 1's batches, seq 3i..3i+2
			for i := 0; i < 4; i++ {
				orig = append(orig, leader.append(idempotentBatch(t, 1, 0, int32(3*i), 3), log.AppendOptions{}))
			}
			leader.append(txnBatch(t, 10, 0, 0, 2), log.AppendOptions{}) // opens 10's transaction
			txnFirst := leader.l.LogEndOffset() - 2
			leader.append(idempotentBatch(t, 2, 3, 0, 1), log.AppendOptions{})
			leader.mark(2, 4, batch.ControlAbort) // fences producer 2's epoch 3
			catchUp(t, leader, follower, r, 3)
			sameProducerState(t, "replicated", leader, follower)

			switch how {
			case "restart":
				if err := follower.m.Close(); err != nil {
					t.Fatal(err)
				}
				follower = openTxnEnv(t, ffs)
			case "crash":
				if err := follower.l.Flush(); err != nil {
					t.Fatal(err)
				}
				ffs.Crash(vfs.CrashOptions{})
				follower = openTxnEnv(t, ffs)
			}
			sameProducerState(t, how, leader, follower)

			// The follower is the leader now.
			for i := 1; i < 4; i++ { // retries of the last three batches (the window holds five)
				res, err := follower.l.Append(idempotentBatch(t, 1, 0, int32(3*i), 3), log.AppendOptions{LeaderEpoch: 1})
				if err != nil || !res.Duplicate || res.BaseOffset != orig[i].BaseOffset || res.LastOffset != orig[i].LastOffset {
					t.Fatalf("retry of seq %d: %+v, %v; want a duplicate at [%d, %d]", 3*i, res, err, orig[i].BaseOffset, orig[i].LastOffset)
				}
			}
			end := follower.l.LogEndOffset()
			if _, err := follower.l.Append(idempotentBatch(t, 1, 0, 13, 1), log.AppendOptions{LeaderEpoch: 1}); log.KafkaCode(err) != CodeOutOfOrderSequence {
				t.Fatalf("gap in the sequence: %v", err)
			}
			if res := follower.append(idempotentBatch(t, 1, 0, 12, 1), log.AppendOptions{LeaderEpoch: 1}); res.Duplicate || res.BaseOffset != end {
				t.Fatalf("next sequence: %+v", res)
			}
			if _, err := follower.l.Append(idempotentBatch(t, 2, 3, 1, 1), log.AppendOptions{LeaderEpoch: 1}); log.KafkaCode(err) != CodeInvalidProducerEpoch {
				t.Fatalf("fenced epoch: %v", err)
			}

			// Producer 10's transaction, begun on the old leader, is open here.
			if lso := follower.l.LastStableOffset(); lso != txnFirst {
				t.Fatalf("LSO %d, want the open transaction's first offset %d", lso, txnFirst)
			}
			if _, err := follower.l.Append(idempotentBatch(t, 10, 0, 2, 1), log.AppendOptions{LeaderEpoch: 1}); log.KafkaCode(err) != CodeInvalidTxnState {
				t.Fatalf("non-transactional batch inside a transaction: %v", err)
			}
			follower.append(txnBatch(t, 10, 0, 2, 1), log.AppendOptions{LeaderEpoch: 1})
			m := follower.append(marker(10, 0, batch.ControlAbort), log.AppendOptions{AllowControl: true, LeaderEpoch: 1})
			aborted := follower.l.AllAbortedTxns()
			want := log.AbortedTxn{ProducerID: 10, FirstOffset: txnFirst, LastOffset: m.BaseOffset, LastStableOffset: m.BaseOffset + 1}
			if len(aborted) != 1 || aborted[0] != want { // producer 2's marker ended no transaction
				t.Fatalf("aborted %+v, want %+v", aborted, want)
			}
			if lso, hw := follower.l.LastStableOffset(), follower.l.HighWatermark(); lso != hw {
				t.Fatalf("LSO %d after the abort, HW %d", lso, hw)
			}
			if got := follower.l.LatestEpoch(); got != 1 {
				t.Fatalf("latest epoch %d", got)
			}
		})
	}
}

// atOffset gives a batch the offset and partition leader epoch a leader
// would have written it with.
func atOffset(b []byte, off int64, epoch int32) []byte {
	batch.SetBaseOffset(b, off)
	batch.SetPartitionLeaderEpoch(b, epoch)
	return b
}

// A follower trusts its leader: batches its own guard would refuse as a
// leader (an older producer epoch, a sequence gap, a non-transactional
// batch inside a transaction, a marker of an older coordinator epoch or
// producer epoch) are appended, and the state follows them.
func TestFollowerTrustsTheLeader(t *testing.T) {
	e := openTxnEnv(t, vfs.NewMemFS())
	next := func() int64 { return e.l.LogEndOffset() }
	e.follow(atOffset(idempotentBatch(t, 5, 2, 0, 2), next(), 0))
	refusedAsLeader := []struct {
		name string
		b    []byte
		code int16
	}{
		{"older producer epoch", idempotentBatch(t, 5, 1, 2, 1), CodeInvalidProducerEpoch},
		{"sequence gap", idempotentBatch(t, 5, 1, 9, 1), CodeOutOfOrderSequence},
	}
	for _, c := range refusedAsLeader {
		if _, err := e.l.Append(slices.Clone(c.b), log.AppendOptions{}); log.KafkaCode(err) != c.code {
			t.Fatalf("%s as leader: %v, want code %d", c.name, err, c.code)
		}
		e.follow(atOffset(c.b, next(), 0))
	}
	if ps := e.st.Producers(); len(ps) != 1 || ps[0].Epoch != 1 || ps[0].LastSequence != 9 {
		t.Fatalf("state after the leader's batches: %+v", ps)
	}

	e.follow(atOffset(txnBatch(t, 6, 0, 0, 1), next(), 0))
	first := next() - 1
	e.follow(atOffset(marker2(6, 0, batch.ControlCommit, 5), next(), 0))
	e.follow(atOffset(txnBatch(t, 6, 0, 1, 1), next(), 0))
	if _, err := e.l.Append(idempotentBatch(t, 6, 0, 2, 1), log.AppendOptions{}); log.KafkaCode(err) != CodeInvalidTxnState {
		t.Fatalf("non-transactional batch in a transaction as leader: %v", err)
	}
	e.follow(atOffset(idempotentBatch(t, 6, 0, 2, 1), next(), 0))
	if _, err := e.l.Append(marker2(6, 0, batch.ControlAbort, 4), log.AppendOptions{AllowControl: true}); log.KafkaCode(err) != CodeCoordinatorFenced {
		t.Fatalf("marker of an older coordinator epoch as leader: %v", err)
	}
	txn2 := first + 2
	m := e.follow(atOffset(marker2(6, 0, batch.ControlAbort, 4), next(), 0))
	want := log.AbortedTxn{ProducerID: 6, FirstOffset: txn2, LastOffset: m.FirstOffset, LastStableOffset: m.FirstOffset + 1}
	if got := e.l.AllAbortedTxns(); len(got) != 1 || got[0] != want {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if lso := e.l.LastStableOffset(); lso != e.l.HighWatermark() {
		t.Fatalf("LSO %d, HW %d", lso, e.l.HighWatermark())
	}
	checkTxnModel(t, e, "after trusting the leader")
}

// A follower crashing with torn, unsynced tails recovers a prefix of the
// leader's log whose transaction state agrees with its batches; caught up
// again from its end, it ends with the leader's state.
func TestFollowerTxnCrashRecovery(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		leader := openTxnEnvCfg(t, vfs.NewMemFS(), smallSegments())
		ffs := vfs.NewMemFS()
		follower := openTxnEnvCfg(t, ffs, smallSegments())
		i := 0
		followerWorkload(t, leader, r, 80, func() {
			if i++; i%3 == 0 {
				catchUp(t, leader, follower, r, 4)
				if r.IntN(4) == 0 {
					if err := follower.l.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
		catchUp(t, leader, follower, r, 4)
		ffs.Crash(vfs.CrashOptions{Rand: r, TornTail: true, Garble: seed%2 == 1})
		follower = openTxnEnvCfg(t, ffs, smallSegments())
		checkTxnModel(t, follower, "follower after crash")
		// The partitionLeaderEpoch field is not covered by the CRC (so
		// that a leader can set it), so a garbled one survives recovery,
		// as in Kafka: compare the rest.
		got := withoutEpochs(t, leaderBatches(t, follower.l, 0, follower.l.LogEndOffset()))
		if want := withoutEpochs(t, leaderBatches(t, leader.l, 0, follower.l.LogEndOffset())); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: recovered follower is not a prefix of the leader", seed)
		}
		catchUp(t, leader, follower, r, 6)
		sameProducerState(t, "caught up after crash", leader, follower)
		follower.m.Close()
		leader.m.Close()
	}
}

// withoutEpochs is a copy of records with every batch's
// partitionLeaderEpoch zeroed.
func withoutEpochs(t *testing.T, records []byte) []byte {
	t.Helper()
	out := slices.Clone(records)
	for p := 0; p < len(out); {
		h, err := batch.ParseHeader(out[p:])
		if err != nil {
			t.Fatal(err)
		}
		batch.SetPartitionLeaderEpoch(out[p:], 0)
		p += h.TotalSize()
	}
	return out
}
