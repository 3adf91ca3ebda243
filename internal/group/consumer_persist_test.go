package group

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConsumerRecordsRoundTrip(t *testing.T) {
	for _, k := range []consumerKey{
		{typ: keyTypeConsumerGroupMetadata, group: "g"},
		{typ: keyTypeConsumerGroupPartitionMetadata, group: "g"},
		{typ: keyTypeConsumerGroupMemberMetadata, group: "g", member: "m"},
		{typ: keyTypeConsumerGroupTargetMetadata, group: "grp"},
		{typ: keyTypeConsumerGroupTargetMember, group: "g", member: ""},
		{typ: keyTypeConsumerGroupCurrentMember, group: "g", member: "member-1"},
	} {
		got, err := decodeConsumerKey(k.encode())
		if err != nil || got != k {
			t.Fatalf("key %+v: got %+v, %v", k, got, err)
		}
	}
	// Kafka's layout: int16 type, int16-length strings.
	if got := (consumerKey{typ: 5, group: "g", member: "m"}).encode(); !bytes.Equal(got, []byte{0, 5, 0, 1, 'g', 0, 1, 'm'}) {
		t.Fatalf("member key bytes % x", got)
	}
	if _, err := decodeConsumerKey([]byte{0, 2, 0, 1, 'g'}); err == nil {
		t.Fatal("a GroupMetadata key decoded as a consumer-group key")
	}
	if _, err := decodeConsumerKey([]byte{0, 5, 0, 1, 'g'}); err == nil {
		t.Fatal("a member key without member id decoded")
	}

	if e, err := decodeEpochValue(encodeEpochValue(-7), "x"); err != nil || e != -7 {
		t.Fatalf("epoch: %d %v", e, err)
	}
	// ConsumerGroupMetadataValue v0, epoch 5, no tagged fields.
	if got := encodeEpochValue(5); !bytes.Equal(got, []byte{0, 0, 0, 0, 0, 5, 0}) {
		t.Fatalf("epoch value bytes % x", got)
	}
	// Kafka 4.1 adds MetadataHash as tagged field 0: it is skipped.
	tagged := append(kbin.AppendInt32([]byte{0, 0}, 9), 1, 0, 8)
	tagged = kbin.AppendInt64(tagged, 12345)
	if e, err := decodeEpochValue(tagged, "x"); err != nil || e != 9 {
		t.Fatalf("tagged epoch: %d %v", e, err)
	}

	topics := []cgTopicMetadata{{id: [16]byte{1, 2}, name: "a", partitions: 4}, {id: [16]byte{9}, name: "bb", partitions: 1}}
	if got, err := decodePartitionMetadataValue(encodePartitionMetadataValue(topics)); err != nil || !reflect.DeepEqual(got, topics) {
		t.Fatalf("partition metadata: %+v %v", got, err)
	}
	if got, err := decodePartitionMetadataValue(encodePartitionMetadataValue(nil)); err != nil || len(got) != 0 {
		t.Fatalf("empty partition metadata: %+v %v", got, err)
	}

	for _, m := range []cgMemberMetadata{
		{instanceID: strp("i"), rackID: strp("r"), clientID: "c", clientHost: "/127.0.0.1", subscribed: []string{"a", "b"},
			regex: strp("a.*"), rebalanceTimeoutMs: 30000, serverAssignor: strp("range")},
		{clientID: "", clientHost: "", rebalanceTimeoutMs: -1},
	} {
		got, err := decodeMemberMetadataValue(encodeMemberMetadataValue(m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("member metadata %+v: got %+v, %v", m, got, err)
		}
	}

	tps := []cgTopicPartitions{{id: [16]byte{3}, partitions: []int32{0, 2}}, {id: [16]byte{4}, partitions: []int32{1}}}
	if got, err := decodeTargetMemberValue(encodeTargetMemberValue(tps)); err != nil || !reflect.DeepEqual(got, tps) {
		t.Fatalf("target member: %+v %v", got, err)
	}
	cur := cgCurrentAssignment{epoch: 4, prevEpoch: 3, state: 1, assigned: tps[:1], revoking: tps[1:]}
	if got, err := decodeCurrentAssignmentValue(encodeCurrentAssignmentValue(cur)); err != nil || !reflect.DeepEqual(got, cur) {
		t.Fatalf("current assignment: %+v %v", got, err)
	}
	// Kafka's layout of ConsumerGroupCurrentMemberAssignmentValue v0.
	one := cgCurrentAssignment{epoch: 2, prevEpoch: 1, assigned: []cgTopicPartitions{{id: [16]byte{7}, partitions: []int32{3}}}}
	want := []byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, // version, epoch, previous epoch, state
		2, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, // one topic, one partition, its tags
		1, // no partitions pending revocation
		0} // tags
	if got := encodeCurrentAssignmentValue(one); !bytes.Equal(got, want) {
		t.Fatalf("current assignment bytes\n got % x\nwant % x", got, want)
	}

	// Truncated and corrupt values are errors, never panics.
	full := encodeCurrentAssignmentValue(cur)
	for i := 0; i < len(full); i++ {
		if _, err := decodeCurrentAssignmentValue(full[:i]); err == nil {
			t.Fatalf("truncated to %d bytes decoded", i)
		}
	}
	if _, err := decodeCurrentAssignmentValue(append(full, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if _, err := decodeEpochValue([]byte{0, 1, 0, 0, 0, 1, 0}, "x"); err == nil {
		t.Fatal("value version 1 accepted")
	}
}

func FuzzConsumerRecordValues(f *testing.F) {
	f.Add(encodeEpochValue(3))
	f.Add(encodePartitionMetadataValue([]cgTopicMetadata{{name: "t", partitions: 2}}))
	f.Add(encodeMemberMetadataValue(cgMemberMetadata{clientID: "c", subscribed: []string{"t"}}))
	f.Add(encodeCurrentAssignmentValue(cgCurrentAssignment{epoch: 1, assigned: []cgTopicPartitions{{partitions: []int32{1, 2}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeEpochValue(b, "x")
		_, _ = decodePartitionMetadataValue(b)
		_, _ = decodeMemberMetadataValue(b)
		_, _ = decodeTargetMemberValue(b)
		_, _ = decodeCurrentAssignmentValue(b)
		_, _ = decodeConsumerKey(b)
	})
}

func (e *env) cgDescribe(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Groups = []string{group}
	return e.c.ConsumerGroupDescribe(r).Groups[0]
}

// twoMemberGroup forms a Stable consumer group of two members sharing t (4 partitions).
func twoMemberGroup(t *testing.T, e *env) (*cgMember, *cgMember) {
	t.Helper()
	e.topics.add("t", 4)
	m1, m2 := &cgMember{id: "m1"}, &cgMember{id: "m2"}
	e.cgHeartbeat("g", m1, []string{"t"}, nil)
	e.cgHeartbeat("g", m2, []string{"t"}, strp("i2"))
	for i := 0; i < 3; i++ {
		e.cgHeartbeat("g", m1, nil, nil)
		e.cgHeartbeat("g", m2, nil, strp("i2"))
	}
	if st := e.cgState("g"); st != "Stable" || m1.count() != 2 || m2.count() != 2 {
		t.Fatalf("group %s, m1 owns %d, m2 owns %d", st, m1.count(), m2.count())
	}
	return m1, m2
}

func TestConsumerGroupSurvivesRestart(t *testing.T) {
	e := newEnv(t, Config{})
	m1, m2 := twoMemberGroup(t, e)
	before := e.cgDescribe("g")
	owned1 := m1.owned

	e.clock.Advance(20 * time.Second)
	e.restart(Config{})
	if after := e.cgDescribe("g"); !reflect.DeepEqual(after, before) {
		t.Fatalf("group changed across restart:\nbefore %+v\nafter  %+v", before, after)
	}
	// A commit before the first heartbeat is accepted at the member's epoch.
	mustCode(t, "commit after restart", commitCode(e.c.OffsetCommit(commitReq("g", "m1", m1.epoch, "t", map[int32]int64{0: 5}))), 0)
	// Heartbeats within the (re-armed) session keep id, epoch and partitions, and a
	// steady heartbeat writes nothing.
	n := e.store.records()
	epoch := m1.epoch
	r := e.cgHeartbeat("g", m1, nil, nil)
	mustCode(t, "heartbeat after restart", r.ErrorCode, 0)
	if m1.epoch != epoch || !reflect.DeepEqual(m1.owned, owned1) {
		t.Fatalf("m1 after restart: epoch %d (was %d), owns %v (was %v)", m1.epoch, epoch, m1.owned, owned1)
	}
	mustCode(t, "m2 heartbeat", e.cgHeartbeat("g", m2, nil, strp("i2")).ErrorCode, 0)
	if got := e.store.records(); got != n {
		t.Fatalf("steady heartbeats wrote %d records", got-n)
	}
	// The session timer started at load: 30 s later both are still members since they
	// heartbeat, and the group stays Stable at the same epoch.
	e.clock.Advance(30 * time.Second)
	mustCode(t, "m1 heartbeat later", e.cgHeartbeat("g", m1, nil, nil).ErrorCode, 0)
	mustCode(t, "m2 heartbeat later", e.cgHeartbeat("g", m2, nil, strp("i2")).ErrorCode, 0)
	if d := e.cgDescribe("g"); d.State != "Stable" || d.Epoch != before.Epoch || len(d.Members) != 2 {
		t.Fatalf("after heartbeats: %+v", d)
	}
}

func TestConsumerGroupMemberExpiresAfterRestart(t *testing.T) {
	e := newEnv(t, Config{})
	m1, m2 := twoMemberGroup(t, e)
	epoch := e.cgDescribe("g").Epoch
	e.restart(Config{})
	// Only m1 heartbeats; m2's session runs out 45 s after the load.
	e.clock.Advance(40 * time.Second)
	mustCode(t, "m1 heartbeat", e.cgHeartbeat("g", m1, nil, nil).ErrorCode, 0)
	e.clock.Advance(6 * time.Second)
	d := e.cgDescribe("g")
	if len(d.Members) != 1 || d.Members[0].MemberID != "m1" || d.Epoch != epoch+1 {
		t.Fatalf("after m2's session: %+v", d)
	}
	mustCode(t, "expired member heartbeat", e.cgHeartbeat("g", m2, nil, strp("i2")).ErrorCode, 25)
	mustCode(t, "expired member commit", commitCode(e.c.OffsetCommit(commitReq("g", "m2", m2.epoch, "t", map[int32]int64{0: 1}))), 25)
	// m1 takes over all partitions, and that too survives a restart.
	for i := 0; i < 2 && m1.count() != 4; i++ {
		e.cgHeartbeat("g", m1, nil, nil)
	}
	if m1.count() != 4 {
		t.Fatalf("m1 owns %d", m1.count())
	}
	before := e.cgDescribe("g")
	e.restart(Config{})
	if after := e.cgDescribe("g"); !reflect.DeepEqual(after, before) {
		t.Fatalf("group changed across restart:\nbefore %+v\nafter  %+v", before, after)
	}
	// Nobody heartbeats: the group is Empty after the session timeout, and stays so.
	e.clock.Advance(46 * time.Second)
	if st := e.cgState("g"); st != "Empty" {
		t.Fatalf("state %s", st)
	}
	e.restart(Config{})
	if d := e.cgDescribe("g"); d.ErrorCode != 0 || d.State != "Empty" || len(d.Members) != 0 || d.Epoch != before.Epoch+1 {
		t.Fatalf("empty group after restart: %+v", d)
	}
	mustCode(t, "old member after restart", e.cgHeartbeat("g", m1, nil, nil).ErrorCode, 25)
}

func TestConsumerGroupDeletedStaysDeleted(t *testing.T) {
	e := newEnv(t, Config{})
	m1, m2 := twoMemberGroup(t, e)
	mustCode(t, "commit", commitCode(e.c.OffsetCommit(commitReq("g", "m1", m1.epoch, "t", map[int32]int64{0: 5}))), 0)
	for _, m := range []*cgMember{m1, m2} {
		leave := &cgMember{id: m.id, epoch: -1}
		mustCode(t, "leave", e.cgHeartbeat("g", leave, nil, nil).ErrorCode, 0)
	}
	e.restart(Config{})
	if d := e.cgDescribe("g"); d.ErrorCode != 0 || d.State != "Empty" {
		t.Fatalf("left group after restart: %+v", d)
	}
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Groups = []string{"g"}
	mustCode(t, "delete", e.c.DeleteGroups(r).Groups[0].ErrorCode, 0)
	e.restart(Config{})
	mustCode(t, "describe deleted", e.cgDescribe("g").ErrorCode, 69)
	if off, code := e.fetchOffset("g", "t", 0); off != -1 || code != 0 {
		t.Fatalf("deleted group's offset: %d %d", off, code)
	}
	// Every consumer-group key written is tombstoned: the latest record per key is nil.
	latest := make(map[string][]byte)
	for _, bs := range e.store.logs {
		for _, b := range bs {
			_ = decodeBatches(b, func(k, v []byte) { latest[string(k)] = v })
		}
	}
	kinds := 0
	for k, v := range latest {
		if typ := keyType(k); typ >= 3 && typ <= 8 {
			kinds++
			if v != nil {
				t.Fatalf("key type %d still has a value after DeleteGroups", typ)
			}
		}
	}
	if kinds < 9 { // 3 group-level keys and 3 per member
		t.Fatalf("only %d consumer-group keys were ever written", kinds)
	}
	// A new group of the same name starts from scratch.
	m3 := &cgMember{id: "m3"}
	mustCode(t, "rejoin", e.cgHeartbeat("g", m3, []string{"t"}, nil).ErrorCode, 0)
	if m3.epoch != 1 {
		t.Fatalf("recreated group epoch %d", m3.epoch)
	}
}

func TestConsumerGroupRestartMidRevocation(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 4)
	m1 := &cgMember{id: "m1"}
	e.cgHeartbeat("g", m1, []string{"t"}, nil)
	m2 := &cgMember{id: "m2"}
	e.cgHeartbeat("g", m2, []string{"t"}, nil)
	e.cgHeartbeat("g", m1, nil, nil) // told to give up two partitions
	if m1.count() != 2 || e.cgState("g") != "Reconciling" {
		t.Fatalf("m1 owns %d, state %s", m1.count(), e.cgState("g"))
	}
	before := e.cgDescribe("g")
	e.restart(Config{})
	if after := e.cgDescribe("g"); !reflect.DeepEqual(after, before) {
		t.Fatalf("group changed across restart:\nbefore %+v\nafter  %+v", before, after)
	}
	// m2 still may not take the partitions m1 has not revoked.
	e.cgHeartbeat("g", m2, nil, nil)
	if m2.count() != 0 {
		t.Fatalf("m2 got %d partitions before m1 revoked", m2.count())
	}
	e.cgHeartbeat("g", m1, nil, nil) // acknowledges the revocation
	e.cgHeartbeat("g", m2, nil, nil)
	if m1.count() != 2 || m2.count() != 2 || m1.epoch != 2 || m2.epoch != 2 || e.cgState("g") != "Stable" {
		t.Fatalf("after revocation: m1 %d@%d, m2 %d@%d, %s", m1.count(), m1.epoch, m2.count(), m2.epoch, e.cgState("g"))
	}
	// A member that must revoke and never does is removed after its rebalance timeout
	// (30 s), the pending revocation having survived a restart.
	m3 := &cgMember{id: "m3"}
	e.cgHeartbeat("g", m3, []string{"t"}, nil)
	var revoker, other *cgMember
	var kept map[[16]byte][]int32
	for _, m := range []*cgMember{m1, m2} {
		old, n := m.owned, m.count()
		e.cgHeartbeat("g", m, nil, nil)
		if m.count() < n {
			revoker, kept = m, old
		} else {
			other = m
		}
	}
	if revoker == nil || other == nil {
		t.Fatal("nobody was asked to revoke when a third member joined")
	}
	e.restart(Config{})
	for i := 0; i < 4; i++ {
		e.clock.Advance(10 * time.Second)
		e.cgHeartbeat("g", other, nil, nil)
		e.cgHeartbeat("g", m3, nil, nil)
		stale := &cgMember{id: revoker.id, epoch: revoker.epoch, owned: kept} // still owns everything
		e.cgHeartbeat("g", stale, nil, nil)
	}
	d := e.cgDescribe("g")
	for _, m := range d.Members {
		if m.MemberID == revoker.id {
			t.Fatalf("%s never revoked but is still a member: %+v", revoker.id, d)
		}
	}
	if len(d.Members) != 2 {
		t.Fatalf("members after the revocation timeout: %+v", d)
	}
}

func TestConsumerGroupStaticLeaveAcrossRestart(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 2)
	m := &cgMember{id: "a"}
	e.cgHeartbeat("g", m, []string{"t"}, strp("inst"))
	mustCode(t, "static leave", e.cgHeartbeat("g", &cgMember{id: "a", epoch: -2}, nil, strp("inst")).ErrorCode, 0)
	e.restart(Config{})
	m2 := &cgMember{id: "b"}
	mustCode(t, "new incarnation", e.cgHeartbeat("g", m2, []string{"t"}, strp("inst")).ErrorCode, 0)
	if m2.epoch != m.epoch || m2.count() != 2 {
		t.Fatalf("new incarnation: %d partitions at epoch %d (was %d)", m2.count(), m2.epoch, m.epoch)
	}
	before := e.cgDescribe("g")
	e.restart(Config{})
	if after := e.cgDescribe("g"); !reflect.DeepEqual(after, before) || len(after.Members) != 1 || after.Members[0].MemberID != "b" {
		t.Fatalf("after take-over and restart:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestConsumerGroupWriteFailureCatchesUp(t *testing.T) {
	e := newEnv(t, Config{})
	m1, _ := twoMemberGroup(t, e)
	e.store.fail = true
	leave := &cgMember{id: "m2", epoch: -1}
	mustCode(t, "leave while storage fails", e.cgHeartbeat("g", leave, nil, nil).ErrorCode, 0)
	e.store.fail = false
	for i := 0; i < 2; i++ {
		e.cgHeartbeat("g", m1, nil, nil)
	}
	before := e.cgDescribe("g")
	if len(before.Members) != 1 || m1.count() != 4 {
		t.Fatalf("before restart: %+v", before)
	}
	e.restart(Config{})
	if after := e.cgDescribe("g"); !reflect.DeepEqual(after, before) {
		t.Fatalf("group changed across restart:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestConsumerGroupTurnedClassicAcrossRestart(t *testing.T) {
	e := newEnv(t, Config{})
	e.topics.add("t", 1)
	m := &cgMember{id: "a"}
	e.cgHeartbeat("g", m, []string{"t"}, nil)
	mustCode(t, "leave", e.cgHeartbeat("g", &cgMember{id: "a", epoch: -1}, nil, nil).ErrorCode, 0)
	ids, gen := e.formGroup("g", 1) // an empty consumer group turns classic
	e.restart(Config{})
	mustCode(t, "no longer a consumer group", e.cgDescribe("g").ErrorCode, 69)
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("classic group after restart: %s", st)
	}
	mustCode(t, "classic member heartbeat", e.heartbeat("g", ids[0], gen, nil), 0)
}
