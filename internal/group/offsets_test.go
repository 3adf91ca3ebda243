package group

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitReq(group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group, r.MemberID, r.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p, o := range offsets {
		tp := kmsg.NewOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset, tp.LeaderEpoch = p, o, 3
		md := "md"
		tp.Metadata = &md
		t.Partitions = append(t.Partitions, tp)
	}
	r.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return r
}

func (e *env) fetchOffset(group, topic string, p int32) (int64, int16) {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 9
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{p}}}
	r.Groups = []kmsg.OffsetFetchRequestGroup{g}
	resp := e.c.OffsetFetch(r)
	rp := resp.Groups[0].Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return 0, rp.ErrorCode
	}
	return rp.Offset, resp.Groups[0].ErrorCode
}

func commitCode(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }

func TestOffsetCommitFetchAndValidation(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 4)
	// Unknown group: -1, no error.
	if off, code := e.fetchOffset("nobody", "t", 0); off != -1 || code != 0 {
		t.Fatalf("unknown group fetch: %d %d", off, code)
	}
	// Simple commit (generation -1) creates an Empty group with no protocol.
	mustCode(t, "simple commit", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{0: 42}))), 0)
	if off, _ := e.fetchOffset("s", "t", 0); off != 42 {
		t.Fatalf("fetched %d, want 42", off)
	}
	if off, _ := e.fetchOffset("s", "t", 1); off != -1 {
		t.Fatalf("uncommitted partition %d", off)
	}
	mustCode(t, "unknown topic", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "nope", map[int32]int64{0: 1}))), 3)
	mustCode(t, "bad partition", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{9: 1}))), 3)
	big := commitReq("s", "", -1, "t", map[int32]int64{0: 1})
	md := strings.Repeat("x", 5000)
	big.Topics[0].Partitions[0].Metadata = &md
	mustCode(t, "metadata too large", commitCode(e.c.OffsetCommit(big)), 12)
	mustCode(t, "unknown group with generation (v9)", commitCode(e.c.OffsetCommit(commitReq("x", "m", 3, "t", map[int32]int64{0: 1}))), 69)
	old := commitReq("x", "m", 3, "t", map[int32]int64{0: 1})
	old.Version = 8
	mustCode(t, "unknown group with generation (v8)", commitCode(e.c.OffsetCommit(old)), 22)

	// Member commits in a live group.
	ids, gen := e.formGroup("g", 2)
	mustCode(t, "member commit", commitCode(e.c.OffsetCommit(commitReq("g", ids[0], gen, "t", map[int32]int64{1: 7}))), 0)
	mustCode(t, "stale generation", commitCode(e.c.OffsetCommit(commitReq("g", ids[0], gen-1, "t", map[int32]int64{1: 8}))), 22)
	mustCode(t, "unknown member", commitCode(e.c.OffsetCommit(commitReq("g", "ghost", gen, "t", map[int32]int64{1: 8}))), 25)
	mustCode(t, "non-member simple commit to live group", commitCode(e.c.OffsetCommit(commitReq("g", "", -1, "t", map[int32]int64{1: 8}))), 25)
	// During CompletingRebalance commits are refused with REBALANCE_IN_PROGRESS.
	e.joinNew("g", nil)
	j := e.join(joinReq("g", ids[0], nil))
	e.join(joinReq("g", ids[1], nil))
	if !j.done() {
		t.Fatal("rebalance did not complete")
	}
	mustCode(t, "commit while completing", commitCode(e.c.OffsetCommit(commitReq("g", ids[0], j.resp.Generation, "t", map[int32]int64{1: 9}))), 27)

	// Storage failure: the commit is refused and not applied.
	e.store.fail = true
	mustCode(t, "storage failure", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{0: 99}))), 15)
	e.store.fail = false
	if off, _ := e.fetchOffset("s", "t", 0); off != 42 {
		t.Fatalf("failed commit applied: %d", off)
	}
}

func TestOffsetsAndGroupsSurviveRestart(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 2)
	ids, gen := e.formGroup("g", 1)
	mustCode(t, "commit", commitCode(e.c.OffsetCommit(commitReq("g", ids[0], gen, "t", map[int32]int64{0: 10, 1: 20}))), 0)
	mustCode(t, "simple", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{0: 5}))), 0)
	mustCode(t, "overwrite", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{0: 6}))), 0)

	e.restart(Config{})
	if off, _ := e.fetchOffset("g", "t", 1); off != 20 {
		t.Fatalf("after restart g/t/1 = %d", off)
	}
	if off, _ := e.fetchOffset("s", "t", 0); off != 6 {
		t.Fatalf("after restart s/t/0 = %d", off)
	}
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("loaded group state %s", st)
	}
	// The loaded member may carry on with its generation...
	mustCode(t, "heartbeat after load", e.heartbeat("g", ids[0], gen, nil), 0)
	// ...and expires if it stops.
	e.clock.Advance(11 * time.Second)
	if st := e.state("g"); st != "Empty" {
		t.Fatalf("state %s after the loaded member went silent", st)
	}
	e.restart(Config{})
	if st := e.state("g"); st != "Empty" {
		t.Fatalf("state %s after second restart", st)
	}
}

func TestOffsetExpiry(t *testing.T) {
	cfg := Config{OffsetsRetention: time.Hour, OffsetsRetentionCheckInterval: time.Minute}
	e := newEnv(t, cfg)
	e.topics.add("t", 1)
	e.topics.add("u", 1)
	mustCode(t, "simple", commitCode(e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{0: 5}))), 0)
	ids, gen := e.formGroup("g", 1)
	mustCode(t, "member commit", commitCode(e.c.OffsetCommit(commitReq("g", ids[0], gen, "t", map[int32]int64{0: 1}))), 0)
	e.clock.Advance(59 * time.Minute)
	mustCode(t, "heartbeat", e.heartbeat("g", ids[0], gen, nil), 25) // session long gone: group Empty since t+10s
	if off, _ := e.fetchOffset("s", "t", 0); off != 5 {
		t.Fatal("expired too early")
	}
	e.clock.Advance(2 * time.Minute)
	if off, _ := e.fetchOffset("s", "t", 0); off != -1 {
		t.Fatalf("simple group's offset not expired: %d", off)
	}
	if off, _ := e.fetchOffset("g", "t", 0); off != -1 {
		t.Fatalf("empty group's offset not expired: %d", off)
	}
	if _, ok := e.c.groups["s"]; ok {
		t.Fatal("empty group without offsets not deleted")
	}
	e.restart(cfg)
	if len(e.c.groups) != 0 {
		t.Fatalf("groups after replaying tombstones: %d", len(e.c.groups))
	}
}

func TestDeleteGroupsAndOffsetDelete(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 1)
	e.topics.add("u", 1)
	ids, gen := e.formGroup("g", 1)
	e.c.OffsetCommit(commitReq("g", ids[0], gen, "t", map[int32]int64{0: 1}))
	e.c.OffsetCommit(commitReq("g", ids[0], gen, "u", map[int32]int64{0: 2}))
	// The test protocol metadata is not a ConsumerMemberMetadata, so a live group's
	// subscriptions are unknown: NON_EMPTY_GROUP.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "u", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	mustCode(t, "offset delete in live group", e.c.OffsetDelete(od).ErrorCode, 68)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g", "missing"}
	resp := e.c.DeleteGroups(dg)
	mustCode(t, "delete live group", resp.Groups[0].ErrorCode, 68)
	mustCode(t, "delete missing group", resp.Groups[1].ErrorCode, 69)

	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Version = 5
	lg.Group = "g"
	lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}
	e.c.LeaveGroup(lg)
	or := e.c.OffsetDelete(od)
	mustCode(t, "offset delete", or.ErrorCode, 0)
	mustCode(t, "offset delete partition", or.Topics[0].Partitions[0].ErrorCode, 0)
	if off, _ := e.fetchOffset("g", "u", 0); off != -1 {
		t.Fatalf("deleted offset still there: %d", off)
	}
	if off, _ := e.fetchOffset("g", "t", 0); off != 1 {
		t.Fatalf("other offset gone: %d", off)
	}
	od.Group = "missing"
	mustCode(t, "offset delete missing group", e.c.OffsetDelete(od).ErrorCode, 69)

	dg.Groups = []string{"g"}
	mustCode(t, "delete empty group", e.c.DeleteGroups(dg).Groups[0].ErrorCode, 0)
	if off, _ := e.fetchOffset("g", "t", 0); off != -1 {
		t.Fatal("offsets survived group deletion")
	}
	e.restart(Config{})
	if _, ok := e.c.groups["g"]; ok {
		t.Fatal("deleted group came back after restart")
	}
}

func TestOffsetDeleteSubscribedTopic(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 1)
	e.topics.add("u", 1)
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
	r := joinReq("g", "", nil)
	r.Protocols[0].Metadata = meta.AppendTo(nil)
	first := e.join(r)
	r2 := joinReq("g", first.resp.MemberID, nil)
	r2.Protocols[0].Metadata = r.Protocols[0].Metadata
	j := e.join(r2)
	e.sync("g", j.resp.MemberID, j.resp.Generation, nil)
	e.c.OffsetCommit(commitReq("g", j.resp.MemberID, j.resp.Generation, "t", map[int32]int64{0: 1}))
	e.c.OffsetCommit(commitReq("g", j.resp.MemberID, j.resp.Generation, "u", map[int32]int64{0: 1}))
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "u", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := e.c.OffsetDelete(od)
	mustCode(t, "top", resp.ErrorCode, 0)
	mustCode(t, "subscribed", resp.Topics[0].Partitions[0].ErrorCode, 86)
	mustCode(t, "unsubscribed", resp.Topics[1].Partitions[0].ErrorCode, 0)
}

func TestListAndDescribeGroups(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 1)
	e.formGroup("g", 1)
	e.c.OffsetCommit(commitReq("s", "", -1, "t", map[int32]int64{0: 1}))
	lr := kmsg.NewPtrListGroupsRequest()
	lr.Version = 5
	resp := e.c.ListGroups(lr)
	if len(resp.Groups) != 2 || resp.Groups[0].Group != "g" || resp.Groups[0].GroupState != "Stable" || resp.Groups[0].GroupType != "classic" {
		t.Fatalf("list: %+v", resp.Groups)
	}
	lr.StatesFilter = []string{"empty"}
	if resp := e.c.ListGroups(lr); len(resp.Groups) != 1 || resp.Groups[0].Group != "s" {
		t.Fatalf("filtered list: %+v", resp.Groups)
	}
	lr.StatesFilter = nil
	lr.TypesFilter = []string{"consumer"}
	if resp := e.c.ListGroups(lr); len(resp.Groups) != 0 {
		t.Fatalf("type filter: %+v", resp.Groups)
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version = 6
	dr.Groups = []string{"g", "missing"}
	d := e.c.DescribeGroups(dr)
	if d.Groups[0].State != "Stable" || d.Groups[0].Protocol != "range" || len(d.Groups[0].Members) != 1 || d.Groups[0].Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe: %+v", d.Groups[0])
	}
	mustCode(t, "describe missing v6", d.Groups[1].ErrorCode, 69)
	dr.Version = 5
	if d := e.c.DescribeGroups(dr); d.Groups[1].ErrorCode != 0 || d.Groups[1].State != "Dead" {
		t.Fatalf("describe missing v5: %+v", d.Groups[1])
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	recs := []record{
		offsetCommitRecord("g", topicPartition{"t", 3}, committedOffset{offset: 9, leaderEpoch: 2, metadata: "m", commitMs: 1}),
		{key: groupMetadataKey("g")},
	}
	b := encodeBatch(recs, 1234)
	var got []record
	if err := decodeBatches(b, func(k, v []byte) { got = append(got, record{k, v}) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].value != nil || string(got[0].key) != string(recs[0].key) {
		t.Fatalf("round trip: %+v", got)
	}
	var ok kmsg.OffsetCommitValue
	if err := ok.ReadFrom(got[0].value); err != nil || ok.Offset != 9 || ok.LeaderEpoch != 2 || ok.Metadata != "m" {
		t.Fatalf("value: %+v %v", ok, err)
	}
	// Every truncation is an error, never a panic.
	for i := 1; i < len(b); i++ {
		_ = decodeBatches(b[:i], func(_, _ []byte) {})
	}
	if err := decodeBatches(b[:len(b)-1], func(_, _ []byte) {}); err == nil {
		t.Fatal("truncated batch accepted")
	}
}

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java: "hello".hashCode() == 99162322, "test".hashCode() == 3556498.
	if p := PartitionFor("hello", 50); p != 99162322%50 {
		t.Fatalf("hello -> %d", p)
	}
	if p := PartitionFor("test", 50); p != 3556498%50 {
		t.Fatalf("test -> %d", p)
	}
	// A negative hash: "polygenelubricants".hashCode() == Integer.MIN_VALUE -> 0.
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Fatalf("MIN_VALUE hash -> %d", p)
	}
}

// A coordinator serves the groups of the __consumer_offsets partitions it has
// loaded: unloading one (leadership moved away) forgets its groups; loading
// it again restores them from the log, and other partitions are untouched.
func TestLoadAndUnloadOnePartition(t *testing.T) {
	e := newEnv(t, Config{NumPartitions: 4})
	e.topics.add("t", 1)
	var a, b string // two groups on different partitions
	for i := 0; b == ""; i++ {
		g := fmt.Sprintf("g%d", i)
		switch {
		case a == "":
			a = g
		case PartitionFor(g, 4) != PartitionFor(a, 4):
			b = g
		}
	}
	mustCode(t, "commit a", commitCode(e.c.OffsetCommit(commitReq(a, "", -1, "t", map[int32]int64{0: 7}))), 0)
	mustCode(t, "commit b", commitCode(e.c.OffsetCommit(commitReq(b, "", -1, "t", map[int32]int64{0: 9}))), 0)
	pa := PartitionFor(a, 4)
	e.c.UnloadPartition(pa)
	if e.c.Loaded(pa) {
		t.Fatal("partition still loaded")
	}
	// Its groups are another coordinator's now: every request about them
	// answers NOT_COORDINATOR, so clients look the coordinator up again.
	if off, code := e.fetchOffset(a, "t", 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("unloaded group answered offset %d, code %d; want NOT_COORDINATOR", off, code)
	}
	mustCode(t, "commit to an unloaded group", commitCode(e.c.OffsetCommit(commitReq(a, "", -1, "t", map[int32]int64{0: 8}))), kerr.NotCoordinator.Code)
	if off, _ := e.fetchOffset(b, "t", 0); off != 9 {
		t.Fatalf("group on another partition lost its offset: %d", off)
	}
	if err := e.c.LoadPartition(pa); err != nil {
		t.Fatal(err)
	}
	if off, _ := e.fetchOffset(a, "t", 0); off != 7 {
		t.Fatalf("reloaded offset %d, want 7", off)
	}
}
