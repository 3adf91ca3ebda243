package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

func (b *builder) create(proc int, typ, topic string) {
	m := []history.Mop{{F: history.MCreate, Key: topic}}
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FCreateTopic, Value: m})
	b.rec(history.Op{Process: proc, Type: typ, F: history.FCreateTopic, Value: m})
}

func (b *builder) alter(proc int, typ, topic string, v int64) {
	m := []history.Mop{{F: history.MAlter, Key: topic, Value: history.I64(v)}}
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FAlterConfig, Value: m})
	b.rec(history.Op{Process: proc, Type: typ, F: history.FAlterConfig, Value: m})
}

// finalMeta records node's final view: topics (name -> partitions) and
// configs (name -> value).
func (b *builder) finalMeta(node int, clusterID string, topics, configs map[string]int64) {
	proc := 100 + node
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FFinalMetadata, Node: &node})
	op := history.Op{Process: proc, Type: history.OK, F: history.FFinalMetadata, Node: &node, ClusterID: clusterID}
	for _, t := range sortedKeys(topics) {
		op.Value = append(op.Value, history.Mop{F: history.MTopic, Key: t, Value: history.I64(topics[t])})
	}
	for _, t := range sortedKeys(configs) {
		op.Value = append(op.Value, history.Mop{F: history.MConfig, Key: t, Value: history.I64(configs[t])})
	}
	b.rec(op)
}

func (b *builder) observe(asked int, ctrl int32) {
	proc := 200 + asked
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FController, Node: &asked})
	b.rec(history.Op{Process: proc, Type: history.OK, F: history.FController, Node: &asked, Controller: &ctrl})
}

func (b *builder) fault(f string, node int, role string) {
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: f, Node: &node, Role: role})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Node: &node, Role: role})
}

// metaClean: three nodes; m-1 created and altered twice (the second
// acknowledged), m-2 created, m-3 of unknown outcome (created after all), m-4
// of unknown outcome (not created), a refused creation, an alter of unknown
// outcome on m-2 that was not applied; every node agrees.
func metaClean() (*builder, map[string]int64, map[string]int64) {
	b := &builder{}
	b.create(0, history.OK, "m-1")
	b.alter(0, history.OK, "m-1", 100)
	b.alter(0, history.OK, "m-1", 101)
	b.create(0, history.OK, "m-2")
	b.create(0, history.Info, "m-3")
	b.create(1, history.Info, "m-4")
	b.create(2, history.Fail, "m-5")
	b.alter(3, history.OK, "m-2", 200)
	b.alter(3, history.Info, "m-2", 201)
	topics := map[string]int64{"m-1": 1, "m-2": 1, "m-3": 1, "__consumer_offsets": 4}
	configs := map[string]int64{"m-1": 101, "m-2": 200, "m-3": 7}
	return b, topics, configs
}

func copyMap(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestCleanMetadataHistoryHasNoAnomaly(t *testing.T) {
	b, topics, configs := metaClean()
	for n := 1; n <= 3; n++ {
		b.finalMeta(n, "c1", topics, configs)
	}
	res := Check(b.ops)
	if len(res.Anomalies) != 0 {
		t.Fatalf("clean metadata history: %v", res.Anomalies)
	}
	if !res.ViewsAgree || res.FinalViews != 3 || res.Creates[history.OK] != 2 || res.Alters[history.OK] != 3 {
		t.Fatalf("result %+v", res)
	}
	s := res.Summary(5)
	if !strings.Contains(s, "metadata: 5 topic creations (2 ok, 1 failed, 2 unknown), 4 config changes (3 ok, 0 failed, 1 unknown); the final views of 3 node(s) agree") {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestEachMetadataAnomalyIsNamed(t *testing.T) {
	cases := []struct {
		name string
		want []string
		make func() *builder
	}{
		{"acknowledged topic missing from every node", []string{MetadataLost}, func() *builder {
			b, topics, configs := metaClean()
			delete(topics, "m-2")
			for n := 1; n <= 3; n++ {
				b.finalMeta(n, "c1", topics, configs)
			}
			return b
		}},
		{"acknowledged topic missing from one node", []string{MetadataLost, MetadataDiverged}, func() *builder {
			b, topics, configs := metaClean()
			b.finalMeta(1, "c1", topics, configs)
			b.finalMeta(2, "c1", topics, configs)
			t3 := copyMap(topics)
			delete(t3, "m-1")
			b.finalMeta(3, "c1", t3, configs)
			return b
		}},
		{"acknowledged config change lost (the older value is back)", []string{MetadataLost}, func() *builder {
			b, topics, configs := metaClean()
			configs["m-1"] = 100
			for n := 1; n <= 3; n++ {
				b.finalMeta(n, "c1", topics, configs)
			}
			return b
		}},
		{"acknowledged config change lost on one node", []string{MetadataLost, MetadataDiverged}, func() *builder {
			b, topics, configs := metaClean()
			b.finalMeta(1, "c1", topics, configs)
			c2 := copyMap(configs)
			delete(c2, "m-2")
			b.finalMeta(2, "c1", topics, c2)
			b.finalMeta(3, "c1", topics, configs)
			return b
		}},
		{"a topic only one node has", []string{MetadataDiverged}, func() *builder {
			b, topics, configs := metaClean()
			b.finalMeta(1, "c1", topics, configs)
			t2 := copyMap(topics)
			t2["m-4"] = 1
			b.finalMeta(2, "c1", t2, configs)
			b.finalMeta(3, "c1", topics, configs)
			return b
		}},
		{"partition counts differ", []string{MetadataDiverged}, func() *builder {
			b, topics, configs := metaClean()
			b.finalMeta(1, "c1", topics, configs)
			t2 := copyMap(topics)
			t2["__consumer_offsets"] = 3
			b.finalMeta(2, "c1", t2, configs)
			return b
		}},
		{"cluster ids differ", []string{MetadataDiverged}, func() *builder {
			b, topics, configs := metaClean()
			b.finalMeta(1, "c1", topics, configs)
			b.finalMeta(2, "c2", topics, configs)
			return b
		}},
		{"no final metadata", []string{IncompleteFinalRead}, func() *builder {
			b, _, _ := metaClean()
			return b
		}},
		{"a node gave no final metadata", []string{IncompleteFinalRead}, func() *builder {
			b, topics, configs := metaClean()
			b.finalMeta(1, "c1", topics, configs)
			n := 2
			b.rec(history.Op{Process: 102, Type: history.Invoke, F: history.FFinalMetadata, Node: &n})
			b.rec(history.Op{Process: 102, Type: history.Info, F: history.FFinalMetadata, Node: &n, Error: "i/o timeout"})
			return b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.make().ops)
			t.Logf("%v", res.Anomalies)
			for _, w := range tc.want {
				if res.Counts[w] == 0 {
					t.Fatalf("want %s, got %v", w, res.Anomalies)
				}
			}
			if len(res.Anomalies) == 0 || strings.HasSuffix(lastLine(res.Summary(5)), " 0 anomalies") {
				t.Fatalf("summary:\n%s", res.Summary(5))
			}
		})
	}
}

// Time to a new controller: node 1, the controller, is killed; node 2 still
// names it, then names node 3; a pause of controller 3 ends with node 3
// controller again after it resumed.
func TestTimeToNewController(t *testing.T) {
	b := &builder{}
	b.observe(2, 1)
	b.fault(history.FKill, 1, history.RoleController) // invoked at t=30
	b.observe(2, 1)
	b.observe(1, 1) // a stale answer of the faulted node itself does not count
	b.observe(2, -1)
	b.observe(3, 3) // completes at t=120: controller 3
	b.nemesis(history.FStart, "")
	b.fault(history.FPause, 3, history.RoleController) // invoked at t=150
	b.observe(1, 3)
	n := 3
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: history.FResume, Node: &n})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FResume, Node: &n}) // healed at t=200
	b.observe(1, 3)                                                                                      // invoked after the heal, completes at t=220
	b.fault(history.FKill, 2, "")                                                                        // not the controller: not measured
	res := Check(b.ops)
	if len(res.Faults) != 3 {
		t.Fatalf("faults %+v", res.Faults)
	}
	f := res.Faults[0]
	if f.NewControllerID != 3 || f.NewController-f.Start != 90 {
		t.Fatalf("kill of the controller: %+v", f)
	}
	f = res.Faults[1]
	if f.NewControllerID != 3 || f.NewController-f.Start != 70 {
		t.Fatalf("pause of the controller: %+v", f)
	}
	if res.Faults[2].NewController != -1 {
		t.Fatalf("fault of another node measured: %+v", res.Faults[2])
	}
	if d, ok := res.ControllerFailover(); !ok || d != 90 {
		t.Fatalf("failover %v %v", d, ok)
	}
	if s := res.Summary(5); !strings.Contains(s, "node 1 was the controller: clients saw controller 3") {
		t.Fatalf("summary:\n%s", s)
	}
}

// Writes blocked while the workloads wind down do not count against
// availability: the window ends when the workloads were told to stop.
func TestAvailabilityEndsWhenWorkloadsStop(t *testing.T) {
	b := &builder{}
	b.send(0, A, 1, 0) // t=20
	b.send(0, A, 2, 1) // t=40
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: history.FStopWorkloads})
	b.rec(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FStopWorkloads})
	b.sendAs(1, history.Info, sendMop(A, 3, -1)) // t=70..80
	b.t += 1000
	b.final(7, history.ReadUncommitted, false, map[string][][2]int64{A: {r(0, 1), r(1, 2)}})
	res := Check(b.ops)
	if res.LongestNoWrite != time.Duration(20) || res.FaultTotal() != 0 {
		t.Fatalf("longest window %v (%v to %v), faults %v", res.LongestNoWrite, res.NoWriteFrom, res.NoWriteTill, res.FaultCount)
	}
}

// The metadata anomalies are planted into, and named in, a history with
// both the data and the metadata workloads; without the metadata workload
// they are not planted, which is no failure.
func TestMetadataSabotagesAreNamed(t *testing.T) {
	b := clean()
	b.create(50, history.OK, "m-1")
	b.alter(50, history.OK, "m-1", 100)
	b.create(50, history.OK, "m-2")
	for n := 1; n <= 3; n++ {
		b.finalMeta(n, "c1", map[string]int64{"m-1": 1, "m-2": 1}, map[string]int64{"m-1": 100, "m-2": 5})
	}
	lines, err := SabotageAll(b.ops)
	for _, l := range lines {
		t.Log(l)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{MetadataLost, MetadataDiverged} {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, kind+": planted and named")
		}
		if !found {
			t.Fatalf("%s not planted and named: %v", kind, lines)
		}
	}
	lines, err = SabotageAll(clean().ops)
	if err != nil {
		t.Fatalf("no metadata workload: %v %v", err, lines)
	}
}

// The longest window without a write while no fault was active: only the
// parts of a window outside every fault (injection to completed heal).
func TestAvailabilityWithoutFault(t *testing.T) {
	b := &builder{}
	b.send(0, A, 1, 0)            // ok at t=20
	b.nemesis(history.FPause, "") // fault from t=30
	b.sendAs(1, history.Info, sendMop(A, 2, -1))
	b.nemesis(history.FResume, "") // healed at t=80
	b.send(2, A, 3, 1)             // ok at t=100: 20 of the window 20..100 had no fault
	b.t += 500                     // writes stop with no fault active
	b.send(2, A, 4, 2)             // ok at t=620
	res := Check(b.ops)
	if res.LongestNoWrite != 520 || res.LongestNoWriteNoFault != 520 || res.NoWriteNoFaultFrom != 100 {
		t.Fatalf("longest %v, without fault %v (%v to %v)", res.LongestNoWrite, res.LongestNoWriteNoFault, res.NoWriteNoFaultFrom, res.NoWriteNoFaultTill)
	}
	b = &builder{}
	b.send(0, A, 1, 0)
	b.nemesis(history.FPause, "")
	b.sendAs(1, history.Info, sendMop(A, 2, -1))
	b.nemesis(history.FResume, "")
	b.send(2, A, 3, 1)
	res = Check(b.ops)
	if res.LongestNoWrite != 80 || res.LongestNoWriteNoFault != 20 || res.NoWriteNoFaultFrom != 80 || res.NoWriteNoFaultTill != 100 {
		t.Fatalf("longest %v, without fault %v (%v to %v)", res.LongestNoWrite, res.LongestNoWriteNoFault, res.NoWriteNoFaultFrom, res.NoWriteNoFaultTill)
	}
	if s := res.Summary(5); !strings.Contains(s, "while no fault was active 0.0s") {
		t.Fatalf("summary:\n%s", s)
	}
}
