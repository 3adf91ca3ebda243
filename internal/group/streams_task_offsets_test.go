package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Members' task offsets are kept (a null list keeps the last report),
// described, and a standby goes to the member that reported the task's state.
func TestStreamsTaskOffsets(t *testing.T) {
	e := newEnv(t, Config{StreamsNumStandbyReplicas: 1, StreamsInitialRebalanceDelay: time.Second})
	e.topics.add("words", 1)
	e.topics.add("app-counts-changelog", 1)
	offsets := []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 0, Offset: 42}}
	ends := []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 0, Offset: 50}}
	for _, id := range []string{"a", "b", "c"} {
		req := streamsHB("app", id, 0, 1)
		if id == "c" {
			req.TaskOffsets, req.TaskEndOffsets = offsets, ends
		}
		if r := e.c.StreamsGroupHeartbeat(testClient, req); r.ErrorCode != 0 {
			t.Fatalf("%s: %+v", id, r)
		}
	}
	e.clock.Advance(time.Second) // the first assignment, with all three members
	standbys := map[string]int{}
	for _, id := range []string{"a", "b", "c"} {
		req := streamsHB("app", id, 0, 1)
		req.Topology, req.ProcessID, req.RebalanceTimeoutMillis = nil, nil, -1 // still at epoch 0, no tasks yet
		r := e.c.StreamsGroupHeartbeat(testClient, req)
		if r.ErrorCode != 0 {
			t.Fatalf("%s: %+v", id, r)
		}
		standbys[id] = taskCount(r.StandbyTasks)
	}
	if standbys["c"] != 1 || standbys["b"] != 0 {
		t.Fatalf("standbys %v: want the one standby on c, which reported the task's state", standbys)
	}

	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"app"}
	for _, m := range e.c.StreamsGroupDescribe(d).Groups[0].Members {
		got := fmt.Sprintf("%+v %+v", m.TaskOffsets, m.TaskEndOffsets)
		want := "[] []"
		if m.MemberID == "c" {
			want = fmt.Sprintf("%+v %+v", offsets, ends)
		}
		if got != want {
			t.Fatalf("member %s task offsets %s, want %s", m.MemberID, got, want)
		}
	}
}
