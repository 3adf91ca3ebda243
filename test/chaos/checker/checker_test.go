package checker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// builder makes hand-made histories: each call appends an invocation and its
// completion, one tick apart.
type builder struct {
	ops []history.Op
	t   int64
}

func (b *builder) rec(op history.Op) {
	b.t += 10
	op.Index = len(b.ops)
	op.Time = b.t
	b.ops = append(b.ops, op)
}

const (
	A = "append/0"
	B = "append/1"
	T = "txn/0"
	U = "txn/1"
)

func sendMop(key string, v int64, off int64) history.Mop {
	m := history.Mop{F: history.FSend, Key: key, Value: history.I64(v)}
	if off >= 0 {
		m.Offset = history.I64(off)
	}
	return m
}

func strip(ms []history.Mop) []history.Mop {
	out := make([]history.Mop, len(ms))
	for i, m := range ms {
		out[i] = history.Mop{F: m.F, Key: m.Key, Value: m.Value}
	}
	return out
}

// send: an acknowledged (ok) send of v to key at off.
func (b *builder) send(proc int, key string, v, off int64) {
	b.sendAs(proc, history.OK, sendMop(key, v, off))
}

func (b *builder) sendAs(proc int, typ string, ms ...history.Mop) {
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FSend, Value: strip(ms)})
	b.rec(history.Op{Process: proc, Type: typ, F: history.FSend, Value: ms})
}

// txn: a transaction; typ ok = committed (commit invoked just before the
// completion), fail = aborted, info = unknown with commit invoked.
func (b *builder) txn(proc int, typ string, ms ...history.Mop) {
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FTxn, Value: strip(ms)})
	op := history.Op{Process: proc, Type: typ, F: history.FTxn, Value: ms}
	if typ != history.Fail {
		op.CommitTime = history.I64(b.t + 5)
	}
	b.rec(op)
}

func (b *builder) poll(proc int, iso, key string, recs ...[2]int64) {
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Isolation: iso})
	b.rec(history.Op{Process: proc, Type: history.OK, F: history.FPoll, Isolation: iso,
		Value: []history.Mop{{F: history.FPoll, Key: key, Records: recs}}})
}

func (b *builder) final(proc int, iso string, incomplete bool, reads map[string][][2]int64) {
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FFinalPoll, Isolation: iso})
	op := history.Op{Process: proc, Type: history.OK, F: history.FFinalPoll, Isolation: iso, Targets: map[string]int64{}, Incomplete: incomplete}
	for _, k := range []string{A, B, T, U} {
		recs, ok := reads[k]
		if !ok {
			continue
		}
		op.Targets[k] = int64(len(recs))
		op.Value = append(op.Value, history.Mop{F: history.FPoll, Key: k, Records: recs})
	}
	b.rec(op)
}

func (b *builder) watermarks(proc int, key string, hwm, lso int64) {
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FOffsets})
	b.rec(history.Op{Process: proc, Type: history.OK, F: history.FOffsets, Watermarks: map[string]history.Watermark{key: {HWM: hwm, LSO: lso}}})
}

func (b *builder) nemesis(f string, errText string) {
	n := 1
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: f, Node: &n})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Node: &n, Error: errText})
}

func r(off, v int64) [2]int64 { return [2]int64{off, v} }

// clean is a history with nothing wrong in it: sends to two keys, a kill in
// the middle, a committed and an aborted transaction over two keys (offsets
// 0,1 committed + marker 2; 3 aborted + marker 4 on T), polls at both
// isolation levels, watermarks rising, and complete final reads.
func clean() *builder {
	b := &builder{}
	b.send(0, A, 1, 0)
	b.send(0, B, 2, 0)
	b.watermarks(9, A, 1, 1)
	b.nemesis(history.FKill, "")
	b.sendAs(1, history.Info, sendMop(A, 3, -1)) // maybe written: it was
	b.sendAs(1, history.Info, sendMop(A, 4, -1)) // maybe written: it was not
	b.nemesis(history.FStart, "")
	b.send(2, A, 5, 2)
	b.send(2, A, 6, 3)
	b.txn(3, history.OK, sendMop(T, 10, 0), sendMop(T, 11, 1), sendMop(U, 12, 0))
	b.txn(3, history.Fail, sendMop(T, 13, 3), sendMop(U, 14, 2))
	b.poll(4, history.ReadUncommitted, A, r(0, 1), r(1, 3))
	b.poll(4, history.ReadUncommitted, A, r(2, 5))
	b.poll(5, history.ReadCommitted, T, r(0, 10), r(1, 11))
	b.poll(6, history.ReadUncommitted, T, r(0, 10), r(1, 11), r(3, 13))
	b.watermarks(9, A, 4, 4)
	b.watermarks(9, T, 5, 5)
	b.final(7, history.ReadUncommitted, false, map[string][][2]int64{
		A: {r(0, 1), r(1, 3), r(2, 5), r(3, 6)}, B: {r(0, 2)},
		T: {r(0, 10), r(1, 11), r(3, 13)}, U: {r(0, 12), r(2, 14)}})
	b.final(8, history.ReadCommitted, false, map[string][][2]int64{
		A: {r(0, 1), r(1, 3), r(2, 5), r(3, 6)}, B: {r(0, 2)},
		T: {r(0, 10), r(1, 11)}, U: {r(0, 12)}})
	return b
}

func TestCleanHistoryHasNoAnomaly(t *testing.T) {
	res := Check(clean().ops)
	if len(res.Anomalies) != 0 {
		t.Fatalf("clean history: %v", res.Anomalies)
	}
	if res.FaultCount[history.FKill] != 1 || res.FaultTotal() != 1 {
		t.Fatalf("faults %v", res.FaultCount)
	}
	if res.Operations != 17 { // 6 sends, 2 txns, 4 polls, 3 watermarks, 2 final reads
		t.Fatalf("operations %d", res.Operations)
	}
	if res.Txns[history.OK] != 1 || res.Txns[history.Fail] != 1 {
		t.Fatalf("txns %v", res.Txns)
	}
	if len(res.Faults) != 1 || res.Faults[0].Healed < 0 || res.Faults[0].FirstOK < res.Faults[0].Healed {
		t.Fatalf("fault availability %+v", res.Faults)
	}
	last := lastLine(res.Summary(3))
	if last != "17 operations, 1 faults, 0 anomalies" {
		t.Fatalf("last line %q", last)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// Each case adds something broken to the clean history (or builds its own)
// and names the anomaly the checker must report.
func TestEachAnomalyIsNamed(t *testing.T) {
	cases := []struct {
		name string
		want string
		make func() *builder
	}{
		{"acknowledged write missing from the final read below its end", LostWrite, func() *builder {
			b := clean()
			b.ops = b.ops[:len(b.ops)-4] // drop the final reads
			b.final(7, history.ReadUncommitted, false, map[string][][2]int64{
				A: {r(0, 1), r(1, 3), r(3, 6)}, B: {r(0, 2)}, // value 5 at offset 2 is gone
				T: {r(0, 10), r(1, 11), r(3, 13)}, U: {r(0, 12), r(2, 14)}})
			b.final(8, history.ReadCommitted, false, map[string][][2]int64{
				A: {r(0, 1), r(1, 3), r(3, 6)}, B: {r(0, 2)},
				T: {r(0, 10), r(1, 11)}, U: {r(0, 12)}})
			return b
		}},
		{"acknowledged write never read though later offsets were (no final read needed)", LostWrite, func() *builder {
			b := &builder{}
			b.send(0, A, 1, 0)
			b.send(0, A, 2, 1)
			b.poll(1, history.ReadUncommitted, A, r(1, 2))
			return b
		}},
		{"committed transaction missing from the read_committed final read", LostWrite, func() *builder {
			b := clean()
			b.ops = b.ops[:len(b.ops)-2]
			b.final(8, history.ReadCommitted, false, map[string][][2]int64{
				A: {r(0, 1), r(1, 3), r(2, 5), r(3, 6)}, B: {r(0, 2)},
				T: {r(1, 11)}, U: {r(0, 12)}})
			return b
		}},
		{"acknowledged write past the end of the final read", Unseen, func() *builder {
			b := clean()
			n := len(b.ops)
			b.ops = b.ops[:n-4]
			b.send(2, B, 20, 1) // acknowledged at offset 1 of B; the final read of B ends at 0
			b.final(7, history.ReadUncommitted, false, map[string][][2]int64{
				A: {r(0, 1), r(1, 3), r(2, 5), r(3, 6)}, B: {r(0, 2)},
				T: {r(0, 10), r(1, 11), r(3, 13)}, U: {r(0, 12), r(2, 14)}})
			b.final(8, history.ReadCommitted, false, map[string][][2]int64{
				A: {r(0, 1), r(1, 3), r(2, 5), r(3, 6)}, B: {r(0, 2)},
				T: {r(0, 10), r(1, 11)}, U: {r(0, 12)}})
			return b
		}},
		{"one value at two offsets", Duplicate, func() *builder {
			b := clean()
			b.poll(10, history.ReadUncommitted, B, r(0, 2), r(1, 2))
			return b
		}},
		{"two values at one offset", InconsistentOffset, func() *builder {
			b := clean()
			b.poll(10, history.ReadUncommitted, A, r(0, 1), r(1, 4)) // value 3 is at offset 1
			return b
		}},
		{"acknowledged at one offset, read at another", InconsistentOffset, func() *builder {
			b := &builder{}
			b.send(0, A, 1, 5)
			b.poll(1, history.ReadUncommitted, A, r(0, 1))
			return b
		}},
		{"value read from a key it was not written to", InconsistentOffset, func() *builder {
			b := clean()
			b.poll(10, history.ReadUncommitted, B, r(0, 2), r(1, 1))
			return b
		}},
		{"value nobody wrote", PhantomRead, func() *builder {
			b := clean()
			b.poll(10, history.ReadUncommitted, B, r(0, 2), r(1, 999))
			return b
		}},
		{"producer's offsets go back", NonMonotonicSend, func() *builder {
			b := &builder{}
			b.send(0, A, 1, 1)
			b.send(0, A, 2, 0)
			return b
		}},
		{"consumer's offsets go back", NonMonotonicPoll, func() *builder {
			b := clean()
			b.poll(4, history.ReadUncommitted, A, r(1, 3)) // process 4 had read up to offset 2
			return b
		}},
		{"consumer skips an offset", PollSkip, func() *builder {
			b := clean()
			b.poll(10, history.ReadUncommitted, A, r(0, 1), r(2, 5)) // offset 1 holds 3
			return b
		}},
		{"consumer starts past the log start", PollSkip, func() *builder {
			b := clean()
			b.poll(10, history.ReadUncommitted, A, r(1, 3))
			return b
		}},
		{"read_committed consumer skips a committed value", PollSkip, func() *builder {
			b := clean()
			b.poll(10, history.ReadCommitted, T, r(1, 11)) // offset 0 holds committed 10
			return b
		}},
		{"read_committed sees an aborted transaction (G1a)", AbortedRead, func() *builder {
			b := clean()
			b.poll(5, history.ReadCommitted, T, r(3, 13))
			return b
		}},
		{"read_committed sees a failed send", AbortedRead, func() *builder {
			b := &builder{}
			b.sendAs(0, history.Fail, sendMop(A, 1, -1))
			b.poll(1, history.ReadCommitted, A, r(0, 1))
			return b
		}},
		{"read_committed sees a transaction before its commit", UncommittedRead, func() *builder {
			b := &builder{}
			b.rec(history.Op{Process: 0, Type: history.Invoke, F: history.FTxn, Value: strip([]history.Mop{sendMop(T, 1, 0)})})
			b.poll(1, history.ReadCommitted, T, r(0, 1)) // completes before commit_time
			b.rec(history.Op{Process: 0, Type: history.OK, F: history.FTxn, Value: []history.Mop{sendMop(T, 1, 0)}, CommitTime: history.I64(b.t + 5)})
			return b
		}},
		{"read_committed sees a transaction never asked to commit", UncommittedRead, func() *builder {
			b := &builder{}
			b.rec(history.Op{Process: 0, Type: history.Invoke, F: history.FTxn, Value: strip([]history.Mop{sendMop(T, 1, 0)})})
			b.rec(history.Op{Process: 0, Type: history.Info, F: history.FTxn, Value: []history.Mop{sendMop(T, 1, 0)}, Error: "produce failed; abort failed"})
			b.poll(1, history.ReadCommitted, T, r(0, 1))
			return b
		}},
		{"high watermark goes back", HWMBackwards, func() *builder {
			b := clean()
			b.watermarks(9, A, 3, 3) // was 4
			return b
		}},
		{"high watermark goes back within one consumer's fetches", HWMBackwards, func() *builder {
			b := &builder{}
			b.send(0, A, 1, 0)
			for _, hwm := range []int64{1, 0} {
				b.rec(history.Op{Process: 1, Type: history.Invoke, F: history.FPoll, Isolation: history.ReadUncommitted})
				b.rec(history.Op{Process: 1, Type: history.OK, F: history.FPoll, Isolation: history.ReadUncommitted,
					Watermarks: map[string]history.Watermark{A: {HWM: hwm, LSO: -1}}})
			}
			return b
		}},
		{"last stable offset goes back", LSOBackwards, func() *builder {
			b := clean()
			b.watermarks(11, T, 5, 2) // was 5, from another process
			return b
		}},
		{"final read did not reach the end", IncompleteFinalRead, func() *builder {
			b := clean()
			b.final(12, history.ReadUncommitted, true, map[string][][2]int64{A: {r(0, 1)}})
			return b
		}},
		{"no final read at all", IncompleteFinalRead, func() *builder {
			b := clean()
			b.ops = b.ops[:len(b.ops)-4]
			return b
		}},
		{"node did not come back", NodeNotRecovered, func() *builder {
			b := clean()
			b.nemesis(history.FPause, "")
			b.nemesis(history.FResume, "node 1 did not answer Metadata within 60s")
			return b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.make().ops)
			t.Logf("%v", res.Anomalies)
			if res.Counts[tc.want] == 0 {
				t.Fatalf("want %s, got %v", tc.want, res.Anomalies)
			}
			s := res.Summary(5)
			if !strings.Contains(s, tc.want) {
				t.Fatalf("summary does not name %s:\n%s", tc.want, s)
			}
			if strings.HasSuffix(lastLine(s), " 0 anomalies") {
				t.Fatalf("last line %q", lastLine(s))
			}
		})
	}
}

// The clean history survives a round trip through JSON lines unchanged in
// meaning.
func TestHistoryRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, op := range clean().ops {
		b, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	ops, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if res := Check(ops); len(res.Anomalies) != 0 || res.Operations != 17 {
		t.Fatalf("after round trip: %d ops, %v", res.Operations, res.Anomalies)
	}
}

// Availability: the longest window with no successful write, and the first
// write after each fault healed.
func TestAvailability(t *testing.T) {
	b := &builder{}
	b.send(0, A, 1, 0)            // ok at t=20
	b.nemesis(history.FPause, "") // t=30,40
	b.sendAs(1, history.Info, sendMop(A, 2, -1))
	b.sendAs(1, history.Info, sendMop(A, 3, -1))
	b.nemesis(history.FResume, "") // heal completes at t=100
	b.send(2, A, 4, 1)             // ok at t=120
	res := Check(b.ops)
	if res.LongestNoWrite != 100 || res.NoWriteFrom != 20 || res.NoWriteTill != 120 {
		t.Fatalf("longest window %v from %v to %v", res.LongestNoWrite, res.NoWriteFrom, res.NoWriteTill)
	}
	if len(res.Faults) != 1 || res.Faults[0].Healed != 100 || res.Faults[0].FirstOK != 120 {
		t.Fatalf("faults %+v", res.Faults)
	}
}

// Every anomaly Sabotage can plant into the clean history is named.
func TestSabotagedHistoriesAreNamed(t *testing.T) {
	lines, err := SabotageAll(clean().ops)
	for _, l := range lines {
		t.Log(l)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(Sabotages) {
		t.Fatalf("%d lines for %d sabotages", len(lines), len(Sabotages))
	}
}
