package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func hasStatus(r *kmsg.StreamsGroupHeartbeatResponse, code int8) string {
	for _, s := range r.Status {
		if s.StatusCode == code {
			return s.StatusDetail
		}
	}
	return ""
}

// streams.initial.rebalance.delay.ms and streams.assignment.interval.ms delay
// assignments (ASSIGNMENT_DELAYED), as Kafka's coordinator does; the initial
// delay's timer assigns the tasks when it ends.
func TestStreamsAssignmentDelays(t *testing.T) {
	e := newEnv(t, Config{StreamsInitialRebalanceDelay: 3 * time.Second, StreamsAssignmentInterval: time.Second})
	e.topics.add("words", 4)
	e.topics.add("app-counts-changelog", 4)
	epochs := map[string]int32{}
	hb := func(member string, join bool) *kmsg.StreamsGroupHeartbeatResponse {
		req := streamsHB("app", member, epochs[member], 1)
		if !join {
			req.Topology, req.ProcessID, req.RebalanceTimeoutMillis = nil, nil, -1
		}
		r := e.c.StreamsGroupHeartbeat(testClient, req)
		if r.ErrorCode != 0 {
			t.Fatalf("%s: %+v", member, r)
		}
		epochs[member] = r.MemberEpoch
		return r
	}
	r := hb("a", true)
	if hasStatus(r, streamsAssignmentDelayed) != detailInitialDelay || taskCount(r.ActiveTasks) != 0 {
		t.Fatalf("first join: %+v", r)
	}
	// The member was answered epoch 0: it heartbeats at epoch 0 without its topology.
	if r := hb("a", false); hasStatus(r, streamsAssignmentDelayed) != detailInitialDelay {
		t.Fatalf("heartbeat within the delay: %+v", r)
	}
	if r := hb("b", true); hasStatus(r, streamsAssignmentDelayed) != detailInitialDelay {
		t.Fatalf("second join within the delay: %+v", r)
	}
	e.clock.Advance(3 * time.Second)
	ra, rb := hb("a", false), hb("b", false)
	if len(ra.Status) != 0 || len(rb.Status) != 0 || taskCount(ra.ActiveTasks)+taskCount(rb.ActiveTasks) != 4 ||
		taskCount(ra.ActiveTasks) == 0 || taskCount(rb.ActiveTasks) == 0 {
		t.Fatalf("after the delay, one assignment for both: %+v / %+v", ra, rb)
	}
	// A third member within the assignment interval waits for a heartbeat after it.
	e.clock.Advance(500 * time.Millisecond)
	if r := hb("c", true); hasStatus(r, streamsAssignmentDelayed) != detailAssignmentInterval || taskCount(r.ActiveTasks) != 0 {
		t.Fatalf("join within the interval: %+v", r)
	}
	e.clock.Advance(600 * time.Millisecond)
	if r := hb("c", false); len(r.Status) != 0 {
		t.Fatalf("heartbeat after the interval: %+v", r)
	}
}

// streams.rack.aware.assignment.tags: standbys go to members of other tag
// values than the active replica's; members without a tag are told
// MISSING_CLIENT_TAGS (v1 only).
func TestStreamsRackAwareStandbys(t *testing.T) {
	e := newEnv(t, Config{StreamsNumStandbyReplicas: 1, GroupConfigs: func(string) map[string]string {
		return map[string]string{"streams.rack.aware.assignment.tags": "zone"}
	}})
	e.topics.add("words", 1)
	e.topics.add("app-counts-changelog", 1)
	zones := map[string]string{"a": "z1", "b": "z1", "c": "z2"}
	var active string
	standbys := map[string]int{}
	epochs := map[string]int32{}
	for i := 0; i < 4; i++ {
		for _, id := range []string{"a", "b", "c"} {
			req := streamsHB("app", id, epochs[id], 1)
			if epochs[id] != 0 {
				req.Topology, req.ProcessID, req.RebalanceTimeoutMillis = nil, nil, -1
			} else {
				req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "zone", Value: zones[id]}}
			}
			r := e.c.StreamsGroupHeartbeat(testClient, req)
			if r.ErrorCode != 0 || hasStatus(r, streamsMissingClientTags) != "" {
				t.Fatalf("%s: %+v", id, r)
			}
			epochs[id] = r.MemberEpoch
			if r.ActiveTasks != nil {
				if taskCount(r.ActiveTasks) > 0 {
					active = id
				}
			}
			if r.StandbyTasks != nil {
				standbys[id] = taskCount(r.StandbyTasks)
			}
		}
	}
	if active == "" {
		t.Fatal("no member got the task")
	}
	for id, n := range standbys {
		if n > 0 && zones[id] == zones[active] {
			t.Fatalf("the standby went to %s in the active's zone %s (active %s, standbys %v)", id, zones[active], active, standbys)
		}
	}
	if standbys["a"]+standbys["b"]+standbys["c"] != 1 {
		t.Fatalf("standbys %v, want one", standbys)
	}

	// A member without the tag.
	r := e.c.StreamsGroupHeartbeat(testClient, streamsHB("app", "d", 0, 1))
	if d := hasStatus(r, streamsMissingClientTags); d != "Missing required client tags for rack-aware standby assignment: [zone]. Configure them via 'client.tag.<tagKey>' in your Streams config." {
		t.Fatalf("member without the tag: %+v", r)
	}
	if r := e.c.StreamsGroupHeartbeat(testClient, streamsHB("app", "e", 0, 0)); hasStatus(r, streamsMissingClientTags) != "" {
		t.Fatalf("MISSING_CLIENT_TAGS sent to a v0 member: %+v", r)
	}
}

func taskCount(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}
