package broker

import (
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsTopology is a word count: subtopology 0 reads "words" and writes
// the repartition topic, subtopology 1 reads it and keeps a store.
func streamsTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1}
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"words"}, []string{"wc-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "wc-repartition", ReplicationFactor: -1}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "wc-counts-changelog", ReplicationFactor: -1,
		Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return t
}

type streamsMember struct {
	t     *testing.T
	tb    *testBroker
	group string
	id    string
	epoch int32
	owned []kmsg.TaskIDs
}

func (m *streamsMember) heartbeat(topology *kmsg.StreamsGroupHeartbeatRequestTopology, report bool) *kmsg.StreamsGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = topology
		req.ProcessID = kmsg.StringPtr("process-" + m.id)
	}
	if report {
		req.ActiveTasks = m.owned
		if req.ActiveTasks == nil {
			req.ActiveTasks = []kmsg.TaskIDs{}
		}
		req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	resp := rawRoundTrip(m.t, m.tb.addr, req).(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			m.owned = resp.ActiveTasks
		}
	}
	return resp
}

func taskCount(tasks []kmsg.TaskIDs) int {
	n := 0
	for _, t := range tasks {
		n += len(t.Partitions)
	}
	return n
}

func taskSet(tasks []kmsg.TaskIDs) []string {
	var out []string
	for _, t := range tasks {
		for _, p := range t.Partitions {
			out = append(out, t.SubtopologyID+"_"+string(rune('0'+p)))
		}
	}
	sort.Strings(out)
	return out
}

func TestStreamsGroupAssignsTasks(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "words", 3, nil)
	a := &streamsMember{t: t, tb: tb, group: "wc", id: "member-a"}
	resp := a.heartbeat(streamsTopology(), false)
	if resp.ErrorCode != 0 || len(resp.Status) != 0 || taskCount(resp.ActiveTasks) != 6 {
		t.Fatalf("first member: %+v", resp)
	}
	// The internal topics exist, with the partitions the topology implies.
	for _, name := range []string{"wc-repartition", "wc-counts-changelog"} {
		tp, ok := tb.broker().topics.Get(name)
		if !ok || tp.Partitions != 3 {
			t.Fatalf("internal topic %s: %v %+v", name, ok, tp)
		}
	}
	if tp, _ := tb.broker().topics.Get("wc-counts-changelog"); tp.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("changelog configs %v", tp.Configs)
	}

	// A second member joins: the first must give up half of its tasks
	// before the second gets them.
	b := &streamsMember{t: t, tb: tb, group: "wc", id: "member-b"}
	if resp := b.heartbeat(streamsTopology(), false); resp.ErrorCode != 0 || taskCount(resp.ActiveTasks) != 0 {
		t.Fatalf("second member joining: %+v", resp)
	}
	if resp := a.heartbeat(nil, false); resp.ErrorCode != 0 || taskCount(a.owned) != 3 {
		t.Fatalf("first member after the join: %+v", resp)
	}
	if resp := b.heartbeat(nil, true); taskCount(b.owned) != 0 {
		t.Fatalf("tasks given before their revocation: %+v", resp)
	}
	if resp := a.heartbeat(nil, true); resp.ErrorCode != 0 {
		t.Fatalf("revocation acknowledged: %+v", resp)
	}
	if resp := b.heartbeat(nil, true); resp.ErrorCode != 0 || taskCount(b.owned) != 3 {
		t.Fatalf("second member after the revocation: %+v", resp)
	}
	all := append(taskSet(a.owned), taskSet(b.owned)...)
	sort.Strings(all)
	if len(all) != 6 || all[0] != "0_0" || all[5] != "1_2" || all[2] == all[3] {
		t.Fatalf("tasks overlap or are missing: a %v b %v", taskSet(a.owned), taskSet(b.owned))
	}
	// Each member has tasks of both subtopologies (the stateful one is spread).
	for _, m := range []*streamsMember{a, b} {
		if len(m.owned) != 2 {
			t.Fatalf("%s owns tasks of %d subtopologies: %v", m.id, len(m.owned), taskSet(m.owned))
		}
	}

	// Offsets are committed with the member epoch, as in consumer groups.
	commit := func(m *streamsMember, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = "wc", m.id, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "words", topicID(t, tb, "words") // by name below v10, by id from v10
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return tb.request(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(a, a.epoch); code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit(a, a.epoch+5); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a wrong epoch: %v", kerr.ErrorForCode(code))
	}

	// Describe and list.
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{"wc", "nope"}
	d := tb.request(dreq).(*kmsg.StreamsGroupDescribeResponse)
	if len(d.Groups) != 2 || d.Groups[0].ErrorCode != 0 || len(d.Groups[0].Members) != 2 || d.Groups[0].Topology == nil ||
		len(d.Groups[0].Topology.Subtopologies) != 2 || d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe: %+v", d)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"streams"}
	if l := tb.request(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 || l.Groups[0].Group != "wc" || l.Groups[0].GroupType != "streams" {
		t.Fatalf("list streams groups: %+v", l.Groups)
	}
	// A consumer-protocol heartbeat to the streams group is refused.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "wc", "m3aaaaaaaaaaaaaaaaaaaa", 30000, []string{"words"}
	if r := tb.request(hb).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a streams group: %+v", r)
	}

	// The first member leaves: the second gets every task.
	a.epoch = -1
	if resp := a.heartbeat(nil, false); resp.ErrorCode != 0 {
		t.Fatalf("leave: %+v", resp)
	}
	if resp := b.heartbeat(nil, true); resp.ErrorCode != 0 || taskCount(b.owned) != 6 {
		t.Fatalf("after the leave: %+v", resp)
	}
}

func TestStreamsGroupMissingSourceTopics(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"auto.create.topics.enable": "false"}})
	m := &streamsMember{t: t, tb: tb, group: "wc", id: "member-a"}
	resp := m.heartbeat(streamsTopology(), false)
	if resp.ErrorCode != 0 || len(resp.Status) != 1 || resp.Status[0].StatusCode != 1 || taskCount(resp.ActiveTasks) != 0 {
		t.Fatalf("missing source topic: %+v", resp)
	}
	if _, ok := tb.broker().topics.Get("wc-repartition"); ok {
		t.Fatal("internal topic created before its partition count was known")
	}
	// Once the source topic exists, the next heartbeat creates the internal
	// topics and assigns the tasks.
	dpTopic(t, tb, "words", 2, nil)
	resp = m.heartbeat(nil, false)
	if resp.ErrorCode != 0 || len(resp.Status) != 0 || taskCount(m.owned) != 4 {
		t.Fatalf("after creating the source topic: %+v", resp)
	}
	// Invalid requests.
	bad := &streamsMember{t: t, tb: tb, group: "wc", id: "member-b"}
	if resp := bad.heartbeat(nil, false); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("join without a topology: %+v", resp)
	}
	ghost := &streamsMember{t: t, tb: tb, group: "wc", id: "ghost", epoch: 3}
	if resp := ghost.heartbeat(nil, false); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %+v", resp)
	}
}

// With group.streams.num.standby.replicas=1, every stateful task (the
// subtopology with a changelog) has a standby on the member of the other
// process, never on its active owner.
func TestStreamsGroupStandbyTasks(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"group.streams.num.standby.replicas": "1"}})
	dpTopic(t, tb, "words", 2, nil)
	a := &streamsMember{t: t, tb: tb, group: "wc", id: "member-a"}
	resp := a.heartbeat(streamsTopology(), false)
	if resp.ErrorCode != 0 || taskCount(resp.ActiveTasks) != 4 || taskCount(resp.StandbyTasks) != 0 {
		t.Fatalf("single member (no other process for standbys): %+v", resp)
	}
	b := &streamsMember{t: t, tb: tb, group: "wc", id: "member-b"}
	b.heartbeat(streamsTopology(), false)
	a.heartbeat(nil, false)
	a.heartbeat(nil, true) // acknowledges the revocation
	resp = b.heartbeat(nil, true)
	if resp.ErrorCode != 0 || taskCount(b.owned) != 2 {
		t.Fatalf("second member: %+v", resp)
	}
	standbys := map[string][]string{}
	for _, m := range []*streamsMember{a, b} {
		if r := m.heartbeat(nil, true); r.ErrorCode != 0 {
			t.Fatalf("%s heartbeat: %+v", m.id, r)
		}
		d := kmsg.NewPtrStreamsGroupDescribeRequest()
		d.Groups = []string{"wc"}
		desc := tb.request(d).(*kmsg.StreamsGroupDescribeResponse)
		for _, dm := range desc.Groups[0].Members {
			if dm.MemberID == m.id {
				standbys[m.id] = taskSet(dm.Assignment.StandbyTasks)
			}
		}
	}
	// Subtopology 1 (stateful) has 2 tasks: each member is standby for the
	// one the other runs; subtopology 0 (stateless) has no standbys.
	for _, m := range []*streamsMember{a, b} {
		sb := standbys[m.id]
		if len(sb) != 1 || sb[0][0] != '1' {
			t.Fatalf("%s standbys %v (active %v)", m.id, sb, taskSet(m.owned))
		}
		for _, act := range taskSet(m.owned) {
			if act == sb[0] {
				t.Fatalf("%s is standby for its own active task %s", m.id, act)
			}
		}
	}
}
