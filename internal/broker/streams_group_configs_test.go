package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeStreamsMembers returns group's members by id, as StreamsGroupDescribe
// reports them.
func describeStreamsMembers(t *testing.T, tb *testBroker, group string) map[string]kmsg.StreamsGroupDescribeResponseGroupMember {
	t.Helper()
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{group}
	desc := tb.request(d).(*kmsg.StreamsGroupDescribeResponse)
	out := map[string]kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, m := range desc.Groups[0].Members {
		out[m.MemberID] = m
	}
	return out
}

// TestStreamsGroupConfigs: the GROUP configs streams.heartbeat.interval.ms,
// streams.num.standby.replicas, streams.session.timeout.ms,
// streams.task.offset.interval.ms and streams.acceptable.recovery.lag (and
// streams.num.warmup.replicas, stored only) are validated
// against the broker's bounds as Kafka does, described, and override the
// broker's group.streams.* settings for that group only.
func TestStreamsGroupConfigs(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{
		"group.streams.min.session.timeout.ms":    "1000",
		"group.streams.min.heartbeat.interval.ms": "100",
		// So long that a member removed within the test's deadline can only
		// have been removed by the group's own session timeout.
		"group.streams.session.timeout.ms":     "600000",
		"group.streams.max.session.timeout.ms": "600000",
	}})
	dpTopic(t, tb, "words", 2, nil)
	str := func(s string) *string { return &s }

	for _, c := range []struct{ name, value string }{
		{"streams.heartbeat.interval.ms", "50"},             // below group.streams.min.heartbeat.interval.ms
		{"streams.heartbeat.interval.ms", "20000"},          // above group.streams.max.heartbeat.interval.ms
		{"streams.session.timeout.ms", "500"},               // below group.streams.min.session.timeout.ms
		{"streams.num.standby.replicas", "3"},               // above group.streams.max.standby.replicas
		{"streams.num.standby.replicas", "-1"},              // negative
		{"streams.num.warmup.replicas", "21"},               // above group.streams.max.warmup.replicas
		{"streams.task.offset.interval.ms", "1000"},         // below group.streams.min.task.offset.interval.ms
		{"streams.acceptable.recovery.lag", "-1"},           // negative
		{"streams.assignor.name", "balanced"},               // not a registered assignor
		{"streams.assignment.interval.ms", "20000"},         // above group.streams.max.assignment.interval.ms
		{"streams.assignment.interval.ms", "-1"},            // negative
		{"streams.initial.rebalance.delay.ms", "-1"},        // negative
		{"streams.rack.aware.assignment.tags", "zone,zone"}, // duplicated
		{"streams.session.timeout.ms", "not-a-time"},        // not an INT
	} {
		if code := alterGroupConfig(t, tb, "wc", c.name, &c.value); code != kerr.InvalidConfig.Code {
			t.Fatalf("%s=%s: got %v, want INVALID_CONFIG", c.name, c.value, kerr.ErrorForCode(code))
		}
	}
	if v, src := describeGroupConfig(t, tb, "wc", "streams.num.standby.replicas"); v != "0" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("default standbys: %s %v", v, src)
	}

	if v, src := describeGroupConfig(t, tb, "wc", "streams.num.warmup.replicas"); v != "2" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("default warm-ups: %s %v", v, src)
	}
	for name, v := range map[string]string{"streams.task.offset.interval.ms": "30000",
		"streams.acceptable.recovery.lag": "123", "streams.num.warmup.replicas": "3"} {
		if code := alterGroupConfig(t, tb, "wc", name, &v); code != 0 {
			t.Fatalf("%s=%s: %v", name, v, kerr.ErrorForCode(code))
		}
	}

	a := &streamsMember{t: t, tb: tb, group: "wc", id: "member-a"}
	if resp := a.heartbeat(streamsTopology(), false); resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != 5000 ||
		resp.TaskOffsetIntervalMillis != 30000 || resp.AcceptableRecoveryLagLegacy != 123 || len(resp.WarmupTasks) != 0 {
		t.Fatalf("first heartbeat: %+v", resp)
	}
	b := &streamsMember{t: t, tb: tb, group: "wc", id: "member-b"}
	b.heartbeat(streamsTopology(), false)
	a.heartbeat(nil, false)
	a.heartbeat(nil, true) // acknowledges the revocation
	if resp := b.heartbeat(nil, true); resp.ErrorCode != 0 || taskCount(b.owned) != 2 {
		t.Fatalf("second member: %+v", resp)
	}
	if sb := describeStreamsMembers(t, tb, "wc")["member-a"].Assignment.StandbyTasks; len(sb) != 0 {
		t.Fatalf("standbys without the config: %v", sb)
	}

	// The heartbeat interval: given from the next heartbeat on.
	if code := alterGroupConfig(t, tb, "wc", "streams.heartbeat.interval.ms", str("700")); code != 0 {
		t.Fatalf("set heartbeat interval: %v", kerr.ErrorForCode(code))
	}
	if v, src := describeGroupConfig(t, tb, "wc", "streams.heartbeat.interval.ms"); v != "700" || src != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("described heartbeat interval: %s %v", v, src)
	}
	if resp := a.heartbeat(nil, false); resp.HeartbeatIntervalMillis != 700 {
		t.Fatalf("heartbeat interval after the group config: %d", resp.HeartbeatIntervalMillis)
	}
	// The session timeout must exceed the group's heartbeat interval.
	if code := alterGroupConfig(t, tb, "wc", "streams.session.timeout.ms", str("700")); code != kerr.InvalidConfig.Code {
		t.Fatalf("session timeout = heartbeat interval: got %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}

	// One standby replica: the group epoch is bumped and each member becomes
	// the standby of the stateful task the other runs.
	if code := alterGroupConfig(t, tb, "wc", "streams.num.standby.replicas", str("1")); code != 0 {
		t.Fatalf("set standbys: %v", kerr.ErrorForCode(code))
	}
	before := a.epoch
	for i := 0; i < 4; i++ {
		a.heartbeat(nil, true)
		b.heartbeat(nil, true)
	}
	if a.epoch <= before {
		t.Fatalf("group epoch not bumped by the standby change: %d -> %d", before, a.epoch)
	}
	members := describeStreamsMembers(t, tb, "wc")
	for _, id := range []string{"member-a", "member-b"} {
		if sb := taskSet(members[id].Assignment.StandbyTasks); len(sb) != 1 || sb[0][0] != '1' {
			t.Fatalf("%s standbys %v", id, sb)
		}
	}
	// Another group keeps the broker's settings.
	o := &streamsMember{t: t, tb: tb, group: "other", id: "member-o"}
	if resp := o.heartbeat(streamsTopology(), false); resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != 5000 ||
		resp.TaskOffsetIntervalMillis != 60000 || resp.AcceptableRecoveryLagLegacy != 10000 {
		t.Fatalf("other group: %+v", resp)
	}

	// The session timeout: a member that stops heartbeating is removed after
	// the group's 1.5 s, not the broker's ten minutes.
	if code := alterGroupConfig(t, tb, "wc", "streams.session.timeout.ms", str("1500")); code != 0 {
		t.Fatalf("set session timeout: %v", kerr.ErrorForCode(code))
	}
	b.heartbeat(nil, true) // arms b's session timer with the group's timeout
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp := a.heartbeat(nil, true); resp.ErrorCode != 0 {
			t.Fatalf("member a: %+v", resp)
		}
		if _, still := describeStreamsMembers(t, tb, "wc")["member-b"]; !still {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("member-b still in the group 60 s after its last heartbeat (streams.session.timeout.ms=1500)")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// a takes over every task.
	deadline = time.Now().Add(60 * time.Second)
	for taskCount(a.owned) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("member a owns %v after b's session expired", taskSet(a.owned))
		}
		a.heartbeat(nil, true)
		time.Sleep(50 * time.Millisecond)
	}
}

// group.streams.acceptable.recovery.lag=0 is told as 0 (not the default).
func TestStreamsGroupAcceptableLagZero(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"group.streams.acceptable.recovery.lag": "0"}})
	dpTopic(t, tb, "words", 1, nil)
	a := &streamsMember{t: t, tb: tb, group: "wc", id: "member-a"}
	if resp := a.heartbeat(streamsTopology(), false); resp.ErrorCode != 0 || resp.AcceptableRecoveryLagLegacy != 0 {
		t.Fatalf("heartbeat: %+v", resp)
	}
}
