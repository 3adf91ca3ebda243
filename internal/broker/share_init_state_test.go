package broker

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// The group coordinator initializes the share-partition state of the
// partitions a share group subscribes to before it assigns them, as Kafka
// 4.4 does: the share coordinator holds state with start offset -1 (the
// group epoch as state epoch) before any fetch, the group's
// ShareGroupStatePartitionMetadata record (15) lists the partitions, the
// first fetch resolves -1 with share.auto.offset.reset, a start offset set
// by AlterShareGroupOffsets before the group subscribed is kept, and a
// restart keeps the initializations.
func TestShareGroupInitializesStateOnSubscribe(t *testing.T) {
	tb := shareTestBroker(t, nil) // share.auto.offset.reset=earliest
	id := shareProduceN(t, tb, "si", 2, 3)
	b := tb.broker()
	key := func(group string, p int32) share.Key { return share.Key{Group: group, TopicID: id, Partition: p} }

	// An altered start offset, before anyone subscribed.
	alt := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alt.GroupID = "pre"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "si"
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 2}}
	alt.Topics = append(alt.Topics, at)
	if r := tb.request(alt).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}

	j := shareHeartbeat(t, tb, "sg", "m1", 0, "si")
	if j.ErrorCode != 0 || j.Assignment == nil || len(j.Assignment.TopicPartitions) != 1 || len(j.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("join: %+v", j)
	}
	for p := int32(0); p < 2; p++ {
		s, found, err := b.readShareState(key("sg", p))
		if err != nil || !found || s.StartOffset != -1 || s.StateEpoch != j.MemberEpoch {
			t.Fatalf("partition %d before any fetch: found %v err %v start %d state epoch %d, want start -1 state epoch %d",
				p, found, err, s.StartOffset, s.StateEpoch, j.MemberEpoch)
		}
	}
	// DescribeShareGroupOffsets with null topics lists them, start offset -1.
	od := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	od.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
	odg := tb.request(od).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	if odg.ErrorCode != 0 || len(odg.Topics) != 1 || len(odg.Topics[0].Partitions) != 2 ||
		odg.Topics[0].Partitions[0].StartOffset != -1 || odg.Topics[0].Partitions[1].Partition != 1 {
		t.Fatalf("describe offsets before any fetch: %+v", odg)
	}
	recs := b.groups.ShareRecordsOf("sg")
	var meta []byte
	for k, v := range recs {
		if len(k) >= 2 && binary.BigEndian.Uint16([]byte(k)) == 15 {
			meta = v
		}
	}
	if meta == nil {
		t.Fatalf("no ShareGroupStatePartitionMetadata record among %d records", len(recs))
	}
	// Record 15, v0: version, no initializing topics, one initialized topic
	// (id, name "si", partitions [0 1]), no deleting topics, no tags.
	want := []byte{0, 0, 1, 2}
	want = append(want, id[:]...)
	want = append(want, 3, 's', 'i', 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0)
	if string(meta) != string(want) {
		t.Fatalf("record 15 value %x, want %x", meta, want)
	}

	// The first fetch resolves -1: earliest, all three records.
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "m1", 0, id, 500, 100)); len(got) != 3 {
		t.Fatalf("first fetch acquired %v, want offsets 0-2", got)
	}

	// The altered group keeps its start offset when it subscribes.
	if j := shareHeartbeat(t, tb, "pre", "m1", 0, "si"); j.ErrorCode != 0 || j.Assignment == nil {
		t.Fatalf("join pre: %+v", j)
	}
	if s, found, err := b.readShareState(key("pre", 0)); err != nil || !found || s.StartOffset != 2 {
		t.Fatalf("pre partition 0 after the join: found %v err %v start %d, want 2", found, err, s.StartOffset)
	}
	if got := shareAcquired(t, shareFetch(t, tb, "pre", "m1", 0, id, 500, 100)); len(got) != 1 {
		t.Fatalf("pre fetch acquired %v, want offset 2", got)
	}

	// DeleteShareGroupOffsets forgets the initialization (after the members leave).
	for _, g := range []string{"sg", "pre"} {
		if r := shareHeartbeat(t, tb, g, "m1", -1); r.ErrorCode != 0 {
			t.Fatalf("leave %s: %v", g, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "sg"
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = "si"
	del.Topics = append(del.Topics, dt)
	if r := tb.request(del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete offsets: %+v", r)
	}
	for p := int32(0); p < 2; p++ {
		if _, found, err := b.readShareState(key("sg", p)); err != nil || found {
			t.Fatalf("partition %d after the deletion: found %v err %v", p, found, err)
		}
	}
	// A rejoin initializes them again; so does nothing else after a restart.
	if j := shareHeartbeat(t, tb, "sg", "m2", 0, "si"); j.ErrorCode != 0 || j.Assignment == nil || len(j.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("rejoin: %+v", j)
	}
	before, found, _ := b.readShareState(key("sg", 1))
	if !found || before.StartOffset != -1 {
		t.Fatalf("partition 1 after the rejoin: found %v start %d", found, before.StartOffset)
	}
	if r := shareHeartbeat(t, tb, "sg", "m2", -1); r.ErrorCode != 0 {
		t.Fatalf("leave m2: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	tb.restart()
	b = tb.broker()
	if j := shareHeartbeat(t, tb, "sg", "m3", 0, "si"); j.ErrorCode != 0 || j.Assignment == nil || len(j.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("join after the restart: %+v", j)
	}
	if s, _, _ := b.readShareState(key("sg", 1)); s.StateEpoch != before.StateEpoch {
		t.Fatalf("state epoch %d after the restart's join, want %d: initialized again", s.StateEpoch, before.StateEpoch)
	}
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "m3", 0, id, 500, 100)); len(got) != 3 {
		t.Fatalf("fetch after the restart acquired %v, want offsets 0-2", got)
	}
}

// The group coordinator initializes a group's share partitions with one
// ReadShareGroupState and one InitializeShareGroupState per share
// coordinator, carrying all of that coordinator's partitions, not one of
// each per partition (40 partitions, spread over several
// __share_group_state partitions, one coordinator: two requests). A
// partition whose state is set already (AlterShareGroupOffsets) keeps it;
// the others get start offset -1 and the group epoch as state epoch; a
// heartbeat with nothing left to initialize sends nothing.
func TestShareInitStateOneRequestPerCoordinator(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"share.auto.offset.reset": "earliest"}})
	const n = 40
	id := shareProduceN(t, tb, "batched", n, 0)
	b := tb.broker()
	alt := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alt.GroupID = "bg"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "batched"
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 3, StartOffset: 0}}
	alt.Topics = append(alt.Topics, at)
	if r := tb.request(alt).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	stateParts := map[int32]bool{}
	ns := b.internalTopicPartitions(ShareStateTopic, b.cfg.ShareStateTopicNumPartitions)
	for p := range int32(n) {
		stateParts[share.Key{Group: "bg", TopicID: id, Partition: p}.StatePartition(ns)] = true
	}
	if len(stateParts) < 2 {
		t.Fatalf("the keys map to %d state partitions, want several", len(stateParts))
	}

	before := b.shareStateRequests.Load()
	j := shareHeartbeat(t, tb, "bg", "m1", 0, "batched")
	if j.ErrorCode != 0 || j.Assignment == nil || len(j.Assignment.TopicPartitions) != 1 || len(j.Assignment.TopicPartitions[0].Partitions) != n {
		t.Fatalf("join: %+v", j)
	}
	if got := b.shareStateRequests.Load() - before; got != 2 {
		t.Fatalf("%d share-state requests to initialize %d partitions of %d state partitions at one coordinator, want 2", got, n, len(stateParts))
	}
	for p := range int32(n) {
		s, found, err := b.readShareState(share.Key{Group: "bg", TopicID: id, Partition: p})
		want := int64(-1)
		if p == 3 {
			want = 0
		}
		if err != nil || !found || s.StartOffset != want || (p != 3 && s.StateEpoch != j.MemberEpoch) {
			t.Fatalf("partition %d: found %v err %v start %d state epoch %d, want start %d (state epoch %d)", p, found, err, s.StartOffset, s.StateEpoch, want, j.MemberEpoch)
		}
	}
	before = b.shareStateRequests.Load()
	if r := shareHeartbeat(t, tb, "bg", "m1", j.MemberEpoch); r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := b.shareStateRequests.Load() - before; got != 0 {
		t.Fatalf("%d share-state requests at a heartbeat with nothing to initialize", got)
	}
}

// A batched initialization answers per partition: the partitions whose
// share coordinator fails (here NOT_COORDINATOR: its state partition is
// not loaded) are not initialized, the others are; initialized again later,
// those keep their state and the others get theirs.
func TestShareInitStatePartitionErrors(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"share.auto.offset.reset": "earliest"}})
	id := shareProduceN(t, tb, "pe", 20, 0)
	b := tb.broker()
	var keys []share.Key
	for p := range int32(20) {
		keys = append(keys, share.Key{Group: "pe", TopicID: id, Partition: p})
	}
	route, err := b.shareStateRouter() // creates and loads the state topic
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if tg, err := route(k); err != nil || !tg.local {
			t.Fatalf("route of %v: %+v %v", k, tg, err)
		}
	}
	ns := b.internalTopicPartitions(ShareStateTopic, b.cfg.ShareStateTopicNumPartitions)
	unloaded := keys[0].StatePartition(ns)
	b.shareCoord.UnloadPartition(unloaded)
	done := b.initShareStatesAt(shareStateTarget{local: true}, "pe", keys, 7)
	first := map[int32]bool{}
	for _, k := range done {
		first[k.Partition] = true
	}
	for _, k := range keys {
		if want := k.StatePartition(ns) != unloaded; first[k.Partition] != want {
			t.Fatalf("partition %d (state partition %d, %d unloaded) initialized %v, want %v", k.Partition, k.StatePartition(ns), unloaded, first[k.Partition], want)
		}
	}
	if len(done) == 0 || len(done) == len(keys) {
		t.Fatalf("%d of %d initialized", len(done), len(keys))
	}
	if err := b.loadShareState(unloaded); err != nil {
		t.Fatal(err)
	}
	if done := b.initShareStates(keys, 9); len(done) != len(keys) {
		t.Fatalf("second initialization: %d of %d", len(done), len(keys))
	}
	for _, k := range keys {
		s, found, err := b.readShareState(k)
		want := int32(9)
		if first[k.Partition] {
			want = 7
		}
		if err != nil || !found || s.StartOffset != -1 || s.StateEpoch != want {
			t.Fatalf("partition %d: found %v err %v start %d state epoch %d, want -1 and %d", k.Partition, found, err, s.StartOffset, s.StateEpoch, want)
		}
	}
}
