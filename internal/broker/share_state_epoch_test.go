package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// shareWriteStateReq is a WriteShareGroupState of partition 0 of topic id for
// group, with the given state epoch and start offset and one acknowledged
// batch at the start offset.
func shareWriteStateReq(group string, id [16]byte, stateEpoch int32, start int64) *kmsg.WriteShareGroupStateRequest {
	w := kmsg.NewPtrWriteShareGroupStateRequest()
	w.Version, w.GroupID = 1, group
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = id
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset, wp.DeliveryCompleteCount = stateEpoch, 0, start, 1
	wp.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{{FirstOffset: start, LastOffset: start, DeliveryState: 2, DeliveryCount: 1}}
	wt.Partitions = append(wt.Partitions, wp)
	w.Topics = append(w.Topics, wt)
	return w
}

// shareReadStateReq is a ReadShareGroupState of partition 0 of topic id.
func shareReadStateReq(group string, id [16]byte) *kmsg.ReadShareGroupStateRequest {
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = id
	rt.Partitions = append(rt.Partitions, kmsg.NewReadShareGroupStateRequestTopicPartition())
	r.Topics = append(r.Topics, rt)
	return r
}

// shareInitStateReq is an InitializeShareGroupState of partition 0 of topic id.
func shareInitStateReq(group string, id [16]byte, stateEpoch int32, start int64) *kmsg.InitializeShareGroupStateRequest {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.StateEpoch, rp.StartOffset = stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// WriteShareGroupState with a state epoch below the one the share coordinator
// recorded (set by InitializeShareGroupState) is FENCED_STATE_EPOCH and changes
// nothing; the recorded epoch, a higher one, -1 (not set) and 0 are written.
func TestShareCoordinatorWriteStaleStateEpochFenced(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 3)
	write := func(stateEpoch int32, start int64) int16 {
		t.Helper()
		r := tb.request(shareWriteStateReq("sg", id, stateEpoch, start)).(*kmsg.WriteShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("WriteShareGroupState: %+v", r)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	read := func() kmsg.ReadShareGroupStateResponseTopicPartition {
		t.Helper()
		rp := tb.request(shareReadStateReq("sg", id)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			t.Fatalf("ReadShareGroupState: %v", kerr.ErrorForCode(rp.ErrorCode))
		}
		return rp
	}

	// FindCoordinator creates __share_group_state; its partition is then
	// loaded by the share coordinator.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType = 6, 2
	fc.CoordinatorKeys = []string{share.Key{Group: "sg", TopicID: id}.CoordinatorKey()}
	if r := tb.request(fc).(*kmsg.FindCoordinatorResponse); len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %+v", r.Coordinators)
	}
	pollUntil(t, "the first WriteShareGroupState at state epoch 1", func() bool {
		switch c := write(1, 0); c {
		case 0:
			return true
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
			return false
		default:
			t.Fatalf("first write at state epoch 1: %v", kerr.ErrorForCode(c))
			return false
		}
	})
	init := tb.request(shareInitStateReq("sg", id, 3, 2)).(*kmsg.InitializeShareGroupStateResponse)
	if c := init.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("InitializeShareGroupState at state epoch 3: %v", kerr.ErrorForCode(c))
	}
	for _, e := range []int32{1, 2} {
		if c := write(e, 1); c != kerr.FencedStateEpoch.Code {
			t.Fatalf("write at state epoch %d after the initialization at 3: %v, want FENCED_STATE_EPOCH", e, kerr.ErrorForCode(c))
		}
	}
	if rp := read(); rp.StateEpoch != 3 || rp.StartOffset != 2 || len(rp.StateBatches) != 0 {
		t.Fatalf("state after the fenced writes: %+v, want state epoch 3, start 2, no batches", rp)
	}
	// -1 is not set; 0 is what an earlier Sluice's leaders send (rolling upgrade).
	for _, e := range []int32{3, -1, 0, 4} {
		if c := write(e, 2); c != 0 {
			t.Fatalf("write at state epoch %d after the initialization at 3: %v", e, kerr.ErrorForCode(c))
		}
	}
	if rp := read(); rp.StateEpoch < 3 || rp.StartOffset != 2 || len(rp.StateBatches) != 1 {
		t.Fatalf("state after the accepted writes: %+v", rp)
	}
}

// A share-partition leader whose state is initialized again behind its back
// (here by an InitializeShareGroupState sent to the share coordinator, as after
// an AlterShareGroupOffsets whose leader could not be told) is fenced at its
// next write (FENCED_STATE_EPOCH): it drops its copy, reads the new state, and
// consumption goes on from the new start offset instead of from the old copy.
func TestShareStateEpochFencedLeaderReadsAgain(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 10)
	b := tb.broker()
	k := share.Key{Group: "sg", TopicID: id, Partition: 0}
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 4, 100)); fmt.Sprint(got) != fmt.Sprint(map[int64]int16{0: 1, 1: 1, 2: 1, 3: 1}) {
		t.Fatalf("first fetch acquired %v", got)
	}
	before, found, err := b.readShareState(k)
	if err != nil || !found {
		t.Fatalf("stored state after the first fetch: found %v, err %v", found, err)
	}
	init := tb.request(shareInitStateReq("sg", id, before.StateEpoch+1, 6)).(*kmsg.InitializeShareGroupStateResponse)
	if c := init.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("InitializeShareGroupState: %v", kerr.ErrorForCode(c))
	}
	stale := b.shares.Lookup(k)
	if stale == nil {
		t.Fatal("no share partition in memory after the first fetch")
	}

	// The acknowledgements apply to the stale copy, whose write is fenced: the
	// copy is dropped and the fetch reads the new state.
	resp := shareFetch(t, tb, "sg", "A", 1, id, 4, 100, shareAck{0, 3, ackAccept})
	got := shareAcquired(t, resp)
	if fmt.Sprint(got) != fmt.Sprint(map[int64]int16{6: 1, 7: 1, 8: 1, 9: 1}) {
		t.Fatalf("fetch after the state was initialized again at 6 acquired %v, want 6-9", got)
	}
	if ack := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; ack == 0 {
		t.Fatal("the acknowledgements of the replaced state were answered as written")
	}
	if sp := b.shares.Lookup(k); sp == nil || sp == stale {
		t.Fatal("the stale copy is still in memory")
	}
	if s, _, _ := b.readShareState(k); s.StateEpoch != before.StateEpoch+1 || s.StartOffset != 6 {
		t.Fatalf("stored state %+v, want start 6 at state epoch %d", s, before.StateEpoch+1)
	}
	// Consumption goes on with the new copy, whose writes pass.
	if top, part := shareAcknowledge(t, tb, "sg", "A", 2, id, shareAck{6, 7, ackAccept}); top != 0 || part != 0 {
		t.Fatalf("acknowledging 6-7: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	if s, _, _ := b.readShareState(k); s.StateEpoch != before.StateEpoch+1 || s.StartOffset != 8 {
		t.Fatalf("stored state after acknowledging 6-7: %+v, want start 8 at state epoch %d", s, before.StateEpoch+1)
	}
}

// AlterShareGroupOffsets initializes the state with a state epoch above the
// stored one: the copy of the old state (as an ExpireAll that listed it would
// write it) is fenced rather than written over the new state, the copy it
// installs carries the new epoch, and consumption goes on from the new start.
func TestShareAlterOffsetsBumpsStateEpoch(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 10)
	b := tb.broker()
	k := share.Key{Group: "sg", TopicID: id, Partition: 0}
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 4, 100)); len(got) != 4 {
		t.Fatalf("first fetch acquired %v", got)
	}
	if top, part := shareAcknowledge(t, tb, "sg", "A", 1, id, shareAck{0, 1, ackAccept}); top != 0 || part != 0 {
		t.Fatalf("acknowledging 0-1: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	before, _, _ := b.readShareState(k)
	stale := b.shares.Lookup(k)
	for i, start := range []int64{7, 5} {
		r := tb.request(alterShareOffsetsReq("sg", "q", 0, start)).(*kmsg.AlterShareGroupOffsetsResponse)
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("alter to %d: %+v", start, r)
		}
		after, _, _ := b.readShareState(k)
		if want := before.StateEpoch + int32(i) + 1; after.StateEpoch != want || after.StartOffset != start || len(after.Batches) != 0 {
			t.Fatalf("after the reset to %d: %+v, want state epoch %d, no batches", start, after, want)
		}
		if sp := b.shares.Lookup(k); sp == nil || sp.Snapshot().StateEpoch != after.StateEpoch {
			t.Fatalf("the copy installed by the reset to %d does not carry the new state epoch %d", start, after.StateEpoch)
		}
	}
	// The old copy still holds 2-3 acquired; acknowledged, then written.
	if err := stale.Acknowledge("A", []share.AckBatch{{First: 2, Last: 3, Types: ackAccept}}, false, b.shares.Now()); err != nil {
		t.Fatal(err)
	}
	if err := b.shares.Persist(stale); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("writing the copy of the state before the reset: %v, want FENCED_STATE_EPOCH", err)
	}
	if s, _, _ := b.readShareState(k); s.StartOffset != 5 || len(s.Batches) != 0 {
		t.Fatalf("the old copy changed the stored state: %+v", s)
	}
	// A new member goes on from the new start offset.
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "B", 0, id, 10, 100)); fmt.Sprint(got) != fmt.Sprint(map[int64]int16{5: 1, 6: 1, 7: 1, 8: 1, 9: 1}) {
		t.Fatalf("fetch after the resets acquired %v, want 5-9", got)
	}
	if top, part := shareAcknowledge(t, tb, "sg", "B", 1, id, shareAck{5, 9, ackAccept}); top != 0 || part != 0 {
		t.Fatalf("acknowledging 5-9: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	if s, _, _ := b.readShareState(k); s.StartOffset != 10 {
		t.Fatalf("stored start offset %d after acknowledging 5-9, want 10", s.StartOffset)
	}
}
