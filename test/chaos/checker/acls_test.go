package checker

import (
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

func (b *builder) acl(proc int, f, typ, name string) {
	m := []history.Mop{{F: history.MAcl, Key: name}}
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: f, Value: m})
	b.rec(history.Op{Process: proc, Type: typ, F: f, Value: m})
}

// finalAcls records node's final view with topic t-1 and the given ACL
// bindings (name -> count).
func (b *builder) finalAcls(node int, acls map[string]int64) {
	proc := 100 + node
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FFinalMetadata, Node: &node})
	op := history.Op{Process: proc, Type: history.OK, F: history.FFinalMetadata, Node: &node, ClusterID: "c1",
		Value: []history.Mop{{F: history.MTopic, Key: "t-1", Value: history.I64(1)}}}
	for _, a := range sortedKeys(acls) {
		op.Value = append(op.Value, history.Mop{F: history.MAcl, Key: a, Value: history.I64(acls[a])})
	}
	b.rec(op)
}

// aclClean: a-1 created (kept), a-2 created then deleted, a-3 created then
// a deletion of unknown outcome (applied), a-4 of unknown outcome (not
// created), a-5 of unknown outcome (created), a-6 refused, a-7 created and
// a deletion refused (kept).
func aclClean() (*builder, map[string]int64) {
	b := &builder{}
	b.create(0, history.OK, "t-1")
	b.acl(0, history.FCreateAcl, history.OK, "a-1")
	b.acl(0, history.FCreateAcl, history.OK, "a-2")
	b.acl(0, history.FDeleteAcl, history.OK, "a-2")
	b.acl(0, history.FCreateAcl, history.OK, "a-3")
	b.acl(0, history.FDeleteAcl, history.Info, "a-3")
	b.acl(1, history.FCreateAcl, history.Info, "a-4")
	b.acl(2, history.FCreateAcl, history.Info, "a-5")
	b.acl(3, history.FCreateAcl, history.Fail, "a-6")
	b.acl(3, history.FCreateAcl, history.OK, "a-7")
	b.acl(3, history.FDeleteAcl, history.Fail, "a-7")
	return b, map[string]int64{"a-1": 1, "a-5": 1, "a-7": 1}
}

func TestCleanAclHistoryHasNoAnomaly(t *testing.T) {
	b, acls := aclClean()
	for n := 1; n <= 3; n++ {
		b.finalAcls(n, acls)
	}
	res := Check(b.ops)
	if len(res.Anomalies) != 0 {
		t.Fatalf("clean ACL history: %v", res.Anomalies)
	}
	if s := res.Summary(5); !strings.Contains(s, "acls: 7 binding creations (4 ok, 1 failed, 2 unknown), 3 deletions (1 ok, 1 failed, 1 unknown)") ||
		!strings.Contains(s, "final views of 3 node(s) agree") {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestEachAclAnomalyIsNamed(t *testing.T) {
	cases := []struct {
		name string
		want []string
		acls [3]func(map[string]int64)
	}{
		{"acknowledged binding missing from every node", []string{MetadataLost}, [3]func(map[string]int64){
			func(m map[string]int64) { delete(m, "a-1") }, func(m map[string]int64) { delete(m, "a-1") }, func(m map[string]int64) { delete(m, "a-1") }}},
		{"acknowledged binding missing from one node", []string{MetadataLost, MetadataDiverged}, [3]func(map[string]int64){
			nil, func(m map[string]int64) { delete(m, "a-7") }, nil}},
		{"acknowledged deletion undone everywhere", []string{MetadataLost}, [3]func(map[string]int64){
			func(m map[string]int64) { m["a-2"] = 1 }, func(m map[string]int64) { m["a-2"] = 1 }, func(m map[string]int64) { m["a-2"] = 1 }}},
		{"acknowledged deletion undone on one node", []string{MetadataLost, MetadataDiverged}, [3]func(map[string]int64){
			nil, nil, func(m map[string]int64) { m["a-2"] = 1 }}},
		{"a binding of unknown outcome on one node only", []string{MetadataDiverged}, [3]func(map[string]int64){
			func(m map[string]int64) { m["a-4"] = 1 }, nil, nil}},
		{"binding counts differ", []string{MetadataDiverged}, [3]func(map[string]int64){
			nil, func(m map[string]int64) { m["a-1"] = 2 }, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, acls := aclClean()
			for n := 1; n <= 3; n++ {
				m := copyMap(acls)
				if f := tc.acls[n-1]; f != nil {
					f(m)
				}
				b.finalAcls(n, m)
			}
			res := Check(b.ops)
			t.Logf("%v", res.Anomalies)
			for _, w := range tc.want {
				if res.Counts[w] == 0 {
					t.Fatalf("want %s, got %v", w, res.Anomalies)
				}
			}
			for k := range res.Counts {
				if k != MetadataLost && k != MetadataDiverged {
					t.Fatalf("unexpected %s: %v", k, res.Anomalies)
				}
			}
			if strings.HasSuffix(lastLine(res.Summary(5)), " 0 anomalies") {
				t.Fatalf("summary:\n%s", res.Summary(5))
			}
		})
	}
}

// A fault of no node (the clients' clock jumped) is healed by a heal of no
// node and counted; the summary names no node for it.
func TestFaultOfNoNode(t *testing.T) {
	b := &builder{}
	b.send(0, A, 1, 0)
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: "client-clock", Kind: "client clock +60s"})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "client-clock", Kind: "client clock +60s"})
	b.send(1, A, 2, 1)
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: history.FHeal})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FHeal})
	b.send(1, A, 3, 2)
	b.final(7, history.ReadUncommitted, false, map[string][][2]int64{A: {r(0, 1), r(1, 2), r(2, 3)}})
	res := Check(b.ops)
	if len(res.Anomalies) != 0 || res.FaultCount["client-clock"] != 1 || len(res.Faults) != 1 || res.Faults[0].Healed < 0 {
		t.Fatalf("anomalies %v, faults %v %+v", res.Anomalies, res.FaultCount, res.Faults)
	}
	if s := res.Summary(5); !strings.Contains(s, "client-clock (no node) at") {
		t.Fatalf("summary:\n%s", s)
	}
}
