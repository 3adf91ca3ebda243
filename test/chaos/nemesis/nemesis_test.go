package nemesis

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRefusesWhatCannotBeInjected(t *testing.T) {
	if got, err := Parse("pause, kill,kill", 1); err != nil || !reflect.DeepEqual(got, []string{Kill, Pause}) {
		t.Fatalf("kill,pause: %v %v", got, err)
	}
	if got, err := Parse("terminate,kill", 3); err != nil || !reflect.DeepEqual(got, []string{Kill, Terminate}) {
		t.Fatalf("terminate,kill: %v %v", got, err)
	}
	if got, err := Parse("clock,lose-unfsynced", 3); err != nil || !reflect.DeepEqual(got, []string{Clock, LoseUnfsynced}) {
		t.Fatalf("clock,lose-unfsynced on 3 nodes: %v %v", got, err)
	}
	if got, err := Parse("clock", 1); err != nil || !reflect.DeepEqual(got, []string{Clock}) {
		t.Fatalf("clock on 1 node: %v %v", got, err)
	}
	for list, want := range map[string]string{
		"kill,partition": `"partition" cannot be injected here: a network partition needs at least 2 nodes`,
		"kill,netem":     `"netem" cannot be injected here`,
		"lose-unfsynced": `"lose-unfsynced" cannot be injected here: losing one node's un-fsynced writes loses acknowledged ones by design unless other replicas hold them: it needs at least 3 nodes`,
		"kill,crash":     `"crash": unknown fault type`,
		"":               "no fault types given",
	} {
		if _, err := Parse(list, 1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--faults %q: error %v, want it to say %q", list, err, want)
		}
	}
}

func TestScheduleIsReproducibleFromTheSeed(t *testing.T) {
	a := Schedule(42, []string{Kill, Pause}, 3, 120*time.Second, false)
	b := Schedule(42, []string{Kill, Pause}, 3, 120*time.Second, false)
	c := Schedule(43, []string{Kill, Pause}, 3, 120*time.Second, false)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 42 and 43 gave the same schedule %v", a)
	}
	var total time.Duration
	kinds := map[string]bool{}
	for _, s := range a {
		total += s.Quiet + s.Duration
		kinds[s.Fault] = true
		if s.Node < 0 || s.Node > 2 {
			t.Fatalf("node %d of 3", s.Node)
		}
	}
	if total > 120*time.Second || len(a) < 5 || !kinds[Kill] || !kinds[Pause] {
		t.Fatalf("schedule of %v with %d steps and faults %v", total, len(a), kinds)
	}
}

func TestScheduleTargetsTheControllerOnAClusterOnly(t *testing.T) {
	for _, s := range Schedule(42, []string{Kill, Pause}, 1, 300*time.Second, false) {
		if s.Controller {
			t.Fatalf("single node: step %v targets the controller", s)
		}
	}
	ctrl, other := 0, 0
	for _, s := range Schedule(42, []string{Kill, Pause}, 3, 300*time.Second, false) {
		if s.Controller {
			ctrl++
		} else {
			other++
		}
	}
	if ctrl == 0 || other == 0 {
		t.Fatalf("3 nodes: %d steps on the controller, %d on a chosen node; want both", ctrl, other)
	}
}

func TestClockOffsetsJumpBothWaysByMinutes(t *testing.T) {
	fwd, back := 0, 0
	for pick := range uint64(200) {
		d := ClockOffset(pick * 0x9e3779b97f4a7c15)
		if d.Abs() < 30*time.Second || d.Abs() > 10*time.Minute {
			t.Fatalf("pick %d: jump %v, want 30s to 10m either way", pick, d)
		}
		if d > 0 {
			fwd++
		} else {
			back++
		}
	}
	if fwd == 0 || back == 0 {
		t.Fatalf("%d jumps forward, %d back: want both", fwd, back)
	}
}

func TestScheduleTargetsPartitionLeadersOnAClusterOnly(t *testing.T) {
	for _, s := range Schedule(42, []string{Kill, Pause}, 1, 300*time.Second, false) {
		if s.Leader {
			t.Fatalf("single node: step %v targets a leader", s)
		}
	}
	leader := 0
	for _, s := range Schedule(42, []string{Kill, Pause, Rolling}, 3, 300*time.Second, false) {
		if s.Leader && (s.Controller || s.Fault == Rolling) {
			t.Fatalf("step %+v targets a leader and the controller, or is a rolling restart", s)
		}
		if s.Leader {
			leader++
		}
	}
	if leader == 0 {
		t.Fatal("3 nodes: no step targets a partition leader")
	}
	// Leader targeting leaves the other fields of the steps as they were.
	for i, s := range Schedule(42, []string{Kill, Pause}, 3, 300*time.Second, false) {
		o := Schedule(42, []string{Kill, Pause}, 3, 300*time.Second, false)[i]
		o.Leader, o.LeaderPick = false, 0
		s.Leader, s.LeaderPick = false, 0
		if s != o {
			t.Fatalf("step %d differs: %+v %+v", i, s, o)
		}
	}
}

func TestLoseUnfsyncedOnTwoNodes(t *testing.T) {
	if _, err := Parse("lose-unfsynced-2", 2); err == nil || !strings.Contains(err.Error(), "needs at least 3 nodes") {
		t.Fatalf("on 2 nodes: %v", err)
	}
	got, err := Parse("lose-unfsynced-2,kill", 3)
	if err != nil || !reflect.DeepEqual(got, []string{Kill, LoseUnfsynced2}) {
		t.Fatalf("lose-unfsynced-2,kill: %v %v", got, err)
	}
	if !NeedsFlushEach(got) || !NeedsFsyncShadow(got) || NeedsFlushEach([]string{LoseUnfsynced}) {
		t.Fatal("lose-unfsynced-2 needs flush.messages=1 and the fsync shadow; lose-unfsynced not flush.messages=1")
	}
	for _, s := range Schedule(7, []string{LoseUnfsynced2}, 3, 300*time.Second, false) {
		if o := Second(s, 3); o == s.Node || o < 0 || o > 2 {
			t.Fatalf("step %+v: second node %d", s, o)
		}
	}
	seen := map[int]bool{}
	for pick := range uint64(10) {
		seen[Second(Step{Node: 1, Pick: pick}, 5)] = true
	}
	if len(seen) != 4 || seen[1] {
		t.Fatalf("second nodes of node 1 of 5: %v", seen)
	}
}

func TestClientClockTargetsNoNode(t *testing.T) {
	got, err := Parse("client-clock,kill", 1)
	if err != nil || !reflect.DeepEqual(got, []string{ClientClock, Kill}) {
		t.Fatalf("client-clock,kill: %v %v", got, err)
	}
	n := 0
	for _, s := range Schedule(11, []string{ClientClock, Kill}, 3, 300*time.Second, false) {
		if s.Fault != ClientClock {
			continue
		}
		n++
		if s.Controller || s.Leader {
			t.Fatalf("client-clock step aimed at a node: %+v", s)
		}
		if d := ClientClockOffset(s.Pick); d < 30*time.Second || d > 10*time.Minute {
			t.Fatalf("client-clock step of %v", d)
		}
		if !strings.Contains(s.String(), "client-clock (the clients)") {
			t.Fatalf("step text %q", s)
		}
	}
	if n == 0 {
		t.Fatal("no client-clock step")
	}
}
