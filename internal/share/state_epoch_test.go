package share

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The state-epoch fence, as Kafka's ShareCoordinatorShard: a write whose state
// epoch is below the recorded one is FENCED_STATE_EPOCH and changes nothing;
// an equal or higher one, or -1 (not set) or 0 (an earlier Sluice), is written. Initialize is not
// fenced and sets the epoch, so that the writers of the state it replaced are
// fenced. The fence survives a replay of the state partition.
func TestCoordinatorStateEpochFence(t *testing.T) {
	log := &memLog{}
	newCoord := func() *Coordinator { return memCoord(t, log) } // updates and snapshots both carry writes below
	c := newCoord()
	k := Key{Group: "g", TopicID: [16]byte{7}, Partition: 0}
	write := func(c *Coordinator, stateEpoch int32, start int64) int16 {
		return c.Write(k, Snapshot{StateEpoch: stateEpoch, LeaderEpoch: 1, StartOffset: start, DeliveryCompleteCount: -1,
			Batches: []StateBatch{{start, start, StateAcknowledged, 1}}})
	}
	read := func(c *Coordinator) Snapshot {
		t.Helper()
		s, found, code := c.Read(k)
		if !found || code != 0 {
			t.Fatalf("read: found %v, code %d", found, code)
		}
		return s
	}

	// New state written with -1 (not set) starts at state epoch 0.
	if code := write(c, -1, 0); code != 0 {
		t.Fatalf("first write with state epoch -1: %v", kerr.ErrorForCode(code))
	}
	if s := read(c); s.StateEpoch != 0 {
		t.Fatalf("state epoch %d after a first write without one, want 0", s.StateEpoch)
	}

	// AlterShareGroupOffsets: Initialize with a higher state epoch.
	if code := c.Initialize(k, 4, 10); code != 0 {
		t.Fatalf("initialize: %v", kerr.ErrorForCode(code))
	}
	if s := read(c); s.StateEpoch != 4 || s.StartOffset != 10 || len(s.Batches) != 0 || s.DeliveryCompleteCount != 0 {
		t.Fatalf("after initialize: %+v, want state epoch 4, start 10, no batches, delivery-complete count 0", s)
	}
	// The writers of the old state (any epoch from 1 to 3) are fenced, and
	// change nothing.
	for _, e := range []int32{1, 3} {
		if code := write(c, e, 2); code != kerr.FencedStateEpoch.Code {
			t.Fatalf("write with state epoch %d after initialize at 4: %v, want FENCED_STATE_EPOCH", e, kerr.ErrorForCode(code))
		}
	}
	if s := read(c); s.StartOffset != 10 || len(s.Batches) != 0 {
		t.Fatalf("a fenced write changed the state: %+v", s)
	}
	// Equal, and -1, pass (ShareUpdate records: the epoch stays 4).
	if code := write(c, 4, 11); code != 0 {
		t.Fatalf("write with the recorded state epoch: %v", kerr.ErrorForCode(code))
	}
	if code := write(c, -1, 12); code != 0 {
		t.Fatalf("write with state epoch -1: %v", kerr.ErrorForCode(code))
	}
	if s := read(c); s.StateEpoch != 4 || s.StartOffset != 12 {
		t.Fatalf("after the writes at 4 and -1: %+v", s)
	}
	// Higher passes too, and becomes the recorded epoch at once (a snapshot,
	// whatever the update count), which fences 4.
	if code := write(c, 6, 13); code != 0 {
		t.Fatalf("write with a higher state epoch: %v", kerr.ErrorForCode(code))
	}
	if s := read(c); s.StateEpoch != 6 || s.StartOffset != 13 {
		t.Fatalf("after a snapshot write at 6: %+v", s)
	}
	if code := write(c, 4, 14); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("write with state epoch 4 after a snapshot at 6: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}

	// A coordinator that replays the partition (failover) fences the same.
	c2 := newCoord()
	if s := read(c2); s.StateEpoch != 6 || s.StartOffset != 13 {
		t.Fatalf("replayed state %+v, want state epoch 6, start 13", s)
	}
	if code := write(c2, 5, 14); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("write with state epoch 5 after the replay: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}
	if code := write(c2, 6, 14); code != 0 {
		t.Fatalf("write with state epoch 6 after the replay: %v", kerr.ErrorForCode(code))
	}
	// 0 is what a share-partition leader of a Sluice from before the fence
	// sends: during a rolling upgrade its writes land, and keep the epoch.
	for range 3 { // updates and a snapshot
		if code := write(c2, 0, 15); code != 0 {
			t.Fatalf("write with state epoch 0: %v", kerr.ErrorForCode(code))
		}
	}
	if s := read(c2); s.StateEpoch != 6 || s.StartOffset != 15 {
		t.Fatalf("after writes at 0: %+v, want state epoch 6, start 15", s)
	}
	// A higher epoch where an update record would come next is recorded too.
	if code := write(c2, 7, 16); code != 0 {
		t.Fatalf("write with state epoch 7: %v", kerr.ErrorForCode(code))
	}
	if code := write(c2, 6, 17); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("write with state epoch 6 after one at 7: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}

	// Initialize itself is not fenced (it sets the epoch), and at start -1
	// the delivery-complete count is unknown.
	if code := c2.Initialize(k, 2, -1); code != 0 {
		t.Fatalf("initialize at a lower epoch: %v", kerr.ErrorForCode(code))
	}
	if s := read(c2); s.StateEpoch != 2 || s.StartOffset != -1 || s.DeliveryCompleteCount != -1 {
		t.Fatalf("after initialize at -1: %+v", s)
	}
}

// coordStore is a Store, Initializer and Options.Read over a Coordinator in
// memory, as the broker's share-state client is over the share coordinator.
type coordStore struct{ c *Coordinator }

func (s coordStore) Write(k Key, value []byte) error {
	if value == nil {
		return codeErr(s.c.Delete(k))
	}
	snap, err := DecodeSnapshotValue(value)
	if err != nil {
		return err
	}
	return codeErr(s.c.Write(k, snap))
}

func (s coordStore) Initialize(k Key, stateEpoch int32, start int64) error {
	return codeErr(s.c.Initialize(k, stateEpoch, start))
}

func (s coordStore) Read(k Key) (Snapshot, bool, error) {
	snap, found, code := s.c.Read(k)
	return snap, found, codeErr(code)
}

func codeErr(code int16) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("share coordinator: %w", kerr.ErrorForCode(code))
}

// A share-partition leader whose state is initialized again behind its back
// (AlterShareGroupOffsets through another broker) sends the state epoch it
// read; its next write is FENCED_STATE_EPOCH, which drops its copy instead of
// writing the old state over the new, and its next use reads the new state
// and goes on with it. The reset itself initializes above the stored epoch.
func TestStateEpochFencedCopyIsReadAgain(t *testing.T) {
	c := &Coordinator{Append: func(int32, []byte, []byte) error { return nil }, Partitions: func() int32 { return 1 }}
	if err := c.LoadPartition(0, func(func(key, value []byte) error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st := coordStore{c}
	leader := New(Options{Store: st, Read: st.Read})
	admin := New(Options{Store: st, Read: st.Read}) // another broker's manager
	k := Key{Group: "g", TopicID: [16]byte{9}, Partition: 0}
	now := time.Now()
	batches := []Batch{{First: 0, Last: 19}}
	initStart := func(string) int64 { return 0 }

	sp, err := leader.Get(k, initStart)
	if err != nil {
		t.Fatal(err)
	}
	if got := sp.Acquire("m", 5, batches, 0, now); len(got) == 0 {
		t.Fatal("nothing acquired")
	}
	if err := sp.Acknowledge("m", []AckBatch{{First: 0, Last: 1, Types: []int8{AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	if err := leader.Persist(sp); err != nil {
		t.Fatalf("persisting the leader's copy: %v", err)
	}
	before, _, _ := c.Read(k)

	if err := admin.ResetStart(k, 15); err != nil {
		t.Fatalf("ResetStart: %v", err)
	}
	after, _, _ := c.Read(k)
	if after.StateEpoch <= before.StateEpoch || after.StartOffset != 15 {
		t.Fatalf("after ResetStart: state epoch %d (was %d), start %d; want a higher epoch and 15", after.StateEpoch, before.StateEpoch, after.StartOffset)
	}

	// The leader's copy (start 2) changes and is written: fenced, dropped.
	if err := sp.Acknowledge("m", []AckBatch{{First: 2, Last: 2, Types: []int8{AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	if err := leader.Persist(sp); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("writing the copy of the replaced state: %v, want FENCED_STATE_EPOCH", err)
	}
	if s, _, _ := c.Read(k); s.StartOffset != 15 || len(s.Batches) != 0 {
		t.Fatalf("the fenced copy changed the stored state: %+v", s)
	}
	if leader.Lookup(k) != nil {
		t.Fatal("the fenced copy is still in memory: the leader would keep writing it, fenced")
	}

	// The next use reads the new state, and its writes pass.
	sp2, err := leader.Get(k, initStart)
	if err != nil {
		t.Fatal(err)
	}
	if start, _ := sp2.Offsets(); start != 15 {
		t.Fatalf("the copy read again starts at %d, want 15", start)
	}
	got := sp2.Acquire("m", 5, batches, 0, now)
	if len(got) == 0 || got[0].First != 15 {
		t.Fatalf("acquired %v after the reset, want from 15", got)
	}
	if err := sp2.Acknowledge("m", []AckBatch{{First: 15, Last: 16, Types: []int8{AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	if err := leader.Persist(sp2); err != nil {
		t.Fatalf("writing the copy read again: %v", err)
	}
	if s, _, _ := c.Read(k); s.StartOffset != 17 || s.StateEpoch != after.StateEpoch {
		t.Fatalf("stored state after the new copy's write: %+v, want start 17 at state epoch %d", s, after.StateEpoch)
	}
}
