package checker

import (
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// replicaLog records node's copies of keys (key -> batches).
func (b *builder) replicaLog(node int, copies map[string][][4]int64) {
	proc := 300 + node
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FReplicaLog, Node: &node})
	op := history.Op{Process: proc, Type: history.OK, F: history.FReplicaLog, Node: &node}
	for _, k := range sortedKeys(copies) {
		op.Value = append(op.Value, history.Mop{F: history.MReplica, Key: k, Batches: copies[k]})
	}
	b.rec(op)
}

// replicated is the clean history plus three identical copies of A (high
// watermark 4 in the final read: batches 0-1, 2, 3) and of B (1); node 3's
// copy of A also holds a batch above the high watermark, which is not
// compared.
func replicated(mutate func(node int, copies map[string][][4]int64)) *builder {
	b := clean()
	for node := 1; node <= 3; node++ {
		copies := map[string][][4]int64{
			A: {{0, 1, 0, 0x1111}, {2, 2, 1, 0x2222}, {3, 3, 1, 0x3333}},
			B: {{0, 0, 0, 0x4444}},
		}
		if node == 3 {
			copies[A] = append(copies[A], [4]int64{4, 6, 2, 0x5555})
		}
		if mutate != nil {
			mutate(node, copies)
		}
		b.replicaLog(node, copies)
	}
	return b
}

func TestReplicasThatAgreeAreClean(t *testing.T) {
	res := Check(replicated(nil).ops)
	if len(res.Anomalies) > 0 {
		t.Fatalf("anomalies in a clean replicated history: %v", res.Anomalies)
	}
	if res.ReplicaLogs != 3 || res.ReplicaKeys != 2 {
		t.Fatalf("compared %d logs, %d keys", res.ReplicaLogs, res.ReplicaKeys)
	}
	if s := res.Summary(5); !strings.Contains(s, "replicas: the data directories of 3 node(s) compared below the final high watermark of 2 partition(s)") {
		t.Fatalf("summary:\n%s", s)
	}
}

// Each way replicas can diverge below the high watermark is named
// replica-divergence, with the key and the nodes.
func TestReplicaDivergenceIsNamed(t *testing.T) {
	cases := map[string]struct {
		mutate func(node int, copies map[string][][4]int64)
		detail string
	}{
		"a batch with another CRC": {func(node int, c map[string][][4]int64) {
			if node == 2 {
				c[A][1][3] = 0x2223
			}
		}, "batch 1 of node 1 is [offsets 2-2, leader epoch 1, crc 00002222], of node 2 [offsets 2-2, leader epoch 1, crc 00002223]"},
		"another leader epoch": {func(node int, c map[string][][4]int64) {
			if node == 1 {
				c[B][0][2] = 7
			}
		}, "leader epoch 7"},
		"other batch boundaries": {func(node int, c map[string][][4]int64) {
			if node == 3 {
				c[A] = [][4]int64{{0, 0, 0, 0x1}, {1, 1, 0, 0x2}, {2, 2, 1, 0x2222}, {3, 3, 1, 0x3333}}
			}
		}, "of node 3 [offsets 0-0, leader epoch 0, crc 00000001]"},
		"a copy that ends below the high watermark": {func(node int, c map[string][][4]int64) {
			if node == 2 {
				c[A] = c[A][:2]
			}
		}, "node 2's copy ends at offset 3, below the high watermark 4"},
		"an empty copy": {func(node int, c map[string][][4]int64) {
			if node == 1 {
				c[B] = nil
			}
		}, "node 1's copy ends at offset 0, below the high watermark 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := Check(replicated(tc.mutate).ops)
			if res.Counts[ReplicaDivergence] == 0 {
				t.Fatalf("not named: %v", res.Anomalies)
			}
			if len(res.Anomalies) != res.Counts[ReplicaDivergence] {
				t.Fatalf("other anomalies too: %v", res.Anomalies)
			}
			found := false
			for _, a := range res.Anomalies {
				found = found || strings.Contains(a.Detail, tc.detail)
			}
			if !found {
				t.Fatalf("no anomaly says %q: %v", tc.detail, res.Anomalies)
			}
			if !strings.HasSuffix(strings.TrimSpace(res.Summary(5)), "anomalies") || !strings.Contains(res.Summary(5), "replica-divergence") {
				t.Fatalf("summary:\n%s", res.Summary(5))
			}
		})
	}
}

func TestReplicaDivergenceIsPlanted(t *testing.T) {
	bad, err := Sabotage(replicated(nil).ops, ReplicaDivergence)
	if err != nil {
		t.Fatal(err)
	}
	if res := Check(bad); res.Counts[ReplicaDivergence] != 1 || len(res.Anomalies) != 1 {
		t.Fatalf("planted divergence: %v", res.Anomalies)
	}
	if _, err := Sabotage(clean().ops, ReplicaDivergence); err == nil {
		t.Fatal("planted into a history without replica logs")
	}
}

// observeLeaders records a Metadata answer of node asked naming leaders.
func (b *builder) observeLeaders(asked int, leaders map[string]int32) {
	proc := 200 + asked
	ctrl := int32(1)
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FController, Node: &asked})
	b.rec(history.Op{Process: proc, Type: history.OK, F: history.FController, Node: &asked, Controller: &ctrl, Leaders: leaders})
}

// The time to a new partition leader after its leader's fault: another node
// named leader, by a node other than the faulted one; a partition led by the
// faulted node again after its return is counted apart.
func TestTimeToNewLeader(t *testing.T) {
	b := &builder{}
	b.observeLeaders(2, map[string]int32{A: 1, B: 1, T: 2}) // 10-20
	b.fault(history.FKill, 1, "")                           // invoked at 30
	b.observeLeaders(1, map[string]int32{A: 3, B: 2, T: 2}) // the faulted node's own answer: ignored
	b.observeLeaders(2, map[string]int32{A: 1, B: -1, T: 2})
	b.observeLeaders(3, map[string]int32{A: 3, B: -1, T: 2}) // completes at 100: A moved after 70
	n := 1
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: history.FStart, Node: &n})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FStart, Node: &n}) // healed at 120
	b.observeLeaders(1, map[string]int32{A: 3, B: 1, T: 2})                                             // completes at 140: B back after 110
	b.fault(history.FPause, 2, "")                                                                      // invoked at 150; T led by 2
	b.observeLeaders(3, map[string]int32{A: 3, B: 1, T: 3})                                             // completes at 180: T moved after 30
	res := Check(b.ops)
	if len(res.Faults) != 2 {
		t.Fatalf("faults %+v", res.Faults)
	}
	got := map[string]LeaderMove{}
	for _, f := range res.Faults {
		for _, m := range f.Leaders {
			got[m.Key] = m
		}
	}
	if m := got[A]; !m.Moved || m.Leader != 3 || m.After != 70 {
		t.Fatalf("A: %+v", m)
	}
	if m := got[B]; m.Moved || m.Leader != 1 || m.After != 110 {
		t.Fatalf("B: %+v", m)
	}
	if m := got[T]; !m.Moved || m.Leader != 3 || m.After != 30 {
		t.Fatalf("T: %+v", m)
	}
	moved, median, longest, back, none := res.LeaderFailover()
	if moved != 2 || median != 70 || longest != 70 || back != 1 || none != 0 {
		t.Fatalf("failover: %d moved, median %v, longest %v, %d back, %d none", moved, median, longest, back, none)
	}
	if s := res.Summary(5); !strings.Contains(s, "partition leaders: 2 partition(s) of a faulted leader got a new leader") {
		t.Fatalf("summary:\n%s", s)
	}
}

// Replicas whose logs agree but whose aborted-transaction indexes differ
// below the high watermark (finding 13 of docs/reliability.md: one
// replica's entry spanned committed transactions) are named
// replica-divergence; entries whose marker is at or above it are not
// compared.
func TestReplicaAbortedIndexDivergenceIsNamed(t *testing.T) {
	withAborted := func(odd [3]int64, above bool) *builder {
		b := replicated(nil)
		b.ops = b.ops[:len(b.ops)-6] // the three replica-log operations, again with indexes
		for node := 1; node <= 3; node++ {
			ab := [][3]int64{{1000, 2, 3}}
			if node == 2 {
				ab = [][3]int64{odd}
			}
			if above {
				ab = append(ab, [3]int64{1000, 4, 5 + int64(node)})
			}
			proc := 300 + node
			b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FReplicaLog, Node: &node})
			op := history.Op{Process: proc, Type: history.OK, F: history.FReplicaLog, Node: &node}
			copies := map[string][][4]int64{
				A: {{0, 1, 0, 0x1111}, {2, 2, 1, 0x2222}, {3, 3, 1, 0x3333}},
				B: {{0, 0, 0, 0x4444}},
			}
			op.Value = append(op.Value, history.Mop{F: history.MReplica, Key: A, Batches: copies[A], Aborted: ab},
				history.Mop{F: history.MReplica, Key: B, Batches: copies[B]})
			b.rec(op)
		}
		return b
	}
	if res := Check(withAborted([3]int64{1000, 2, 3}, true).ops); len(res.Anomalies) > 0 {
		t.Fatalf("agreeing indexes (differing only above the high watermark): %v", res.Anomalies)
	}
	res := Check(withAborted([3]int64{1000, 0, 3}, false).ops)
	if res.Counts[ReplicaDivergence] != 1 || len(res.Anomalies) != 1 {
		t.Fatalf("diverging index: %v", res.Anomalies)
	}
	want := "aborted-transaction index entry 0 of node 1 is [producer 1000, offsets 2-3], of node 2 [producer 1000, offsets 0-3]"
	if d := res.Anomalies[0].Detail; !strings.Contains(d, want) {
		t.Fatalf("detail %q does not say %q", d, want)
	}
}
