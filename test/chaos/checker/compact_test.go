package checker

import (
	"testing"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

func (b *builder) kv(proc int, typ, item string, v *int64, off int64) {
	m := history.Mop{F: history.MKV, Key: "c/0", Item: item, Value: v}
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FKVSend, Value: []history.Mop{m}})
	if typ == history.OK {
		m.Offset = history.I64(off)
	}
	b.rec(history.Op{Process: proc, Type: typ, F: history.FKVSend, Value: []history.Mop{m}})
}

func (b *builder) kvFinal(latest ...history.Mop) {
	b.rec(history.Op{Process: 40, Type: history.Invoke, F: history.FKVFinal})
	b.rec(history.Op{Process: 40, Type: history.OK, F: history.FKVFinal, Value: latest})
}

func kvm(item string, v *int64, off int64) history.Mop {
	return history.Mop{F: history.MKV, Key: "c/0", Item: item, Value: v, Offset: history.I64(off)}
}

func TestCompaction(t *testing.T) {
	v := history.I64
	base := func() *builder {
		b := clean()
		b.kv(30, history.OK, "a", v(100), 0)
		b.kv(30, history.OK, "b", v(101), 1)
		b.kv(30, history.OK, "a", v(102), 2)
		b.kv(30, history.OK, "b", nil, 3) // tombstone
		b.kv(30, history.OK, "c", v(103), 4)
		b.kv(30, history.Info, "c", v(104), 0) // unknown: written at 5, or not
		return b
	}
	for name, tc := range map[string]struct {
		final []history.Mop
		want  int
	}{
		"clean":                       {[]history.Mop{kvm("a", v(102), 2), kvm("b", nil, 3), kvm("c", v(103), 4)}, 0},
		"tombstone removed":           {[]history.Mop{kvm("a", v(102), 2), kvm("c", v(103), 4)}, 0},
		"unknown write landed":        {[]history.Mop{kvm("a", v(102), 2), kvm("c", v(104), 5)}, 0},
		"older value came back":       {[]history.Mop{kvm("a", v(100), 0), kvm("c", v(103), 4)}, 1},
		"tombstone lost, value back":  {[]history.Mop{kvm("a", v(102), 2), kvm("b", v(101), 1), kvm("c", v(103), 4)}, 1},
		"key gone":                    {[]history.Mop{kvm("c", v(103), 4)}, 1},
		"value nobody wrote":          {[]history.Mop{kvm("a", v(102), 2), kvm("c", v(999), 6)}, 1},
		"another value at the offset": {[]history.Mop{kvm("a", v(103), 2), kvm("c", v(103), 4)}, 1},
	} {
		b := base()
		b.kvFinal(tc.final...)
		res := Check(b.ops)
		if res.Counts[CompactionMismatch] != tc.want || len(res.Anomalies) != tc.want {
			t.Errorf("%s: %v, want %d compaction-mismatch", name, res.Anomalies, tc.want)
		}
	}
}

// replicaKV records one node's copy of compacted partition c/0: its latest
// record per record key (kv mops; a nil value is a tombstone).
func (b *builder) replicaKV(node int, latest ...history.Mop) {
	proc := 50 + node
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FReplicaLog, Node: &node})
	ms := []history.Mop{{F: history.MReplicaKV, Key: "c/0"}}
	for _, m := range latest {
		m.F = history.MReplicaKV
		ms = append(ms, m)
	}
	b.rec(history.Op{Process: proc, Type: history.OK, F: history.FReplicaLog, Node: &node, Value: ms})
}

func TestCompactedReplicas(t *testing.T) {
	v := history.I64
	a, b, c := kvm("a", v(102), 2), kvm("b", nil, 3), kvm("c", v(103), 4)
	for name, tc := range map[string]struct {
		copies [3][]history.Mop
		want   int
	}{
		"identical":                        {[3][]history.Mop{{a, b, c}, {a, b, c}, {a, b, c}}, 0},
		"tombstone removed on one replica": {[3][]history.Mop{{a, b, c}, {a, c}, {a, b, c}}, 0},
		"an older value on one replica":    {[3][]history.Mop{{a, b, c}, {kvm("a", v(100), 0), b, c}, {a, b, c}}, 1},
		"a key missing on one replica":     {[3][]history.Mop{{a, b, c}, {a, b, c}, {a, b}}, 1},
		"a deleted key back on one":        {[3][]history.Mop{{a, b, c}, {a, kvm("b", v(101), 1), c}, {a, b, c}}, 1},
		"two replicas off":                 {[3][]history.Mop{{a, b, c}, {a, b}, {kvm("a", v(100), 0), b, c}}, 2},
	} {
		bl := clean()
		for i, cp := range tc.copies {
			bl.replicaKV(i+1, cp...)
		}
		res := Check(bl.ops)
		if res.Counts[CompactedReplicaDivergence] != tc.want || len(res.Anomalies) != tc.want {
			t.Errorf("%s: %v, want %d %s", name, res.Anomalies, tc.want, CompactedReplicaDivergence)
		}
	}
}
