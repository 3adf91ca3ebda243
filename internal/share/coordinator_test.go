package share

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memLog is a state partition in memory.
type memLog struct{ recs [][2][]byte }

func (l *memLog) replay(apply func(key, value []byte) error) error {
	for _, r := range l.recs {
		if err := apply(r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// memCoord returns a Coordinator that appends to log, leads its one state
// partition and has replayed log into it, writing a snapshot every third
// write of a share partition.
func memCoord(t *testing.T, log *memLog) *Coordinator {
	t.Helper()
	c := &Coordinator{
		Append: func(p int32, key, value []byte) error {
			log.recs = append(log.recs, [2][]byte{key, value})
			return nil
		},
		Partitions:  func() int32 { return 1 },
		PerSnapshot: 3,
	}
	if err := c.LoadPartition(0, log.replay); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCoordinatorUpdatesAndSnapshots(t *testing.T) {
	log := &memLog{}
	newCoord := func() *Coordinator { return memCoord(t, log) }
	c := newCoord()
	k := Key{Group: "g", TopicID: [16]byte{1}, Partition: 2}
	if _, found, code := c.Read(k); found || code != 0 {
		t.Fatalf("read of unknown state: found %v code %d", found, code)
	}
	writes := []Snapshot{
		{StartOffset: 0, LeaderEpoch: 1, DeliveryCompleteCount: -1, Batches: []StateBatch{{0, 9, StateAvailable, 1}}},
		{StartOffset: 0, LeaderEpoch: 1, DeliveryCompleteCount: 2, Batches: []StateBatch{{0, 1, StateAcknowledged, 1}, {5, 5, StateArchived, 1}}},
		{StartOffset: 2, LeaderEpoch: 1, DeliveryCompleteCount: 1, Batches: []StateBatch{{2, 3, StateAvailable, 2}}},
		{StartOffset: 2, LeaderEpoch: 2, DeliveryCompleteCount: 1, Batches: []StateBatch{{9, 12, StateAcknowledged, 1}}},
	}
	for _, w := range writes {
		if code := c.Write(k, w); code != 0 {
			t.Fatalf("write: %d", code)
		}
	}
	want := []StateBatch{{2, 3, StateAvailable, 2}, {4, 4, StateAvailable, 1}, {5, 5, StateArchived, 1}, {6, 8, StateAvailable, 1}, {9, 12, StateAcknowledged, 1}}
	s, found, _ := c.Read(k)
	if !found || s.StartOffset != 2 || s.LeaderEpoch != 2 || !reflect.DeepEqual(s.Batches, want) {
		t.Fatalf("state %+v", s)
	}
	// snapshot, update, update, snapshot: a snapshot every third write
	var types []int16
	for _, r := range log.recs {
		_, typ, err := decodeAnyKey(r[0])
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, typ)
	}
	if !reflect.DeepEqual(types, []int16{0, 1, 1, 0}) {
		t.Fatalf("record types %v", types)
	}
	// a write from an older leader is fenced
	if code := c.Write(k, Snapshot{StartOffset: 2, LeaderEpoch: 1, DeliveryCompleteCount: -1}); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("write with an old leader epoch: %d", code)
	}
	// a new coordinator replaying the partition has the same state
	c2 := newCoord()
	s2, found, _ := c2.Read(k)
	if !found || s2.StartOffset != 2 || !reflect.DeepEqual(s2.Batches, want) || s2.SnapshotEpoch != s.SnapshotEpoch {
		t.Fatalf("replayed state %+v, want %+v", s2, s)
	}
	// updates after the last snapshot are replayed on top of it
	if code := c2.Write(k, Snapshot{StartOffset: 4, LeaderEpoch: 2, DeliveryCompleteCount: -1, Batches: []StateBatch{{4, 4, StateAcknowledged, 1}}}); code != 0 {
		t.Fatal(code)
	}
	c3 := newCoord()
	s3, _, _ := c3.Read(k)
	if s3.StartOffset != 4 || s3.Batches[0] != (StateBatch{4, 4, StateAcknowledged, 1}) || len(s3.Batches) != 4 {
		t.Fatalf("after update %+v", s3)
	}
	// delete, then nothing is found, also after a replay
	if code := c3.Delete(k); code != 0 {
		t.Fatal(code)
	}
	if _, found, _ := newCoord().Read(k); found {
		t.Fatal("state found after delete")
	}
	// a partition not led here is NOT_COORDINATOR
	c3.UnloadPartition(0)
	if _, _, code := c3.Read(k); code == 0 {
		t.Fatal("read of an unloaded partition succeeded")
	}
	if code := c3.Write(k, writes[0]); code == 0 {
		t.Fatal("write to an unloaded partition succeeded")
	}
}

func TestUpdateValueRoundTrip(t *testing.T) {
	u := Snapshot{SnapshotEpoch: 3, LeaderEpoch: 7, StartOffset: 42, DeliveryCompleteCount: 5,
		Batches: []StateBatch{{42, 50, StateAcknowledged, 1}, {51, 51, StateAvailable, 3}}}
	got, err := decodeUpdateValue(encodeUpdateValue(u))
	if err != nil || !reflect.DeepEqual(got, u) {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if _, err := decodeUpdateValue(encodeUpdateValue(u)[:20]); err == nil {
		t.Fatal("truncated update decoded")
	}
}

// With SLUICE_SHARE_RECORDS_DIR set, the test writes an update and a snapshot
// value there, for a check against Kafka's decoders.
func TestShareRecordsDump(t *testing.T) {
	dir := os.Getenv("SLUICE_SHARE_RECORDS_DIR")
	if dir == "" {
		t.Skip("SLUICE_SHARE_RECORDS_DIR not set")
	}
	s := Snapshot{SnapshotEpoch: 3, StateEpoch: 1, LeaderEpoch: 7, StartOffset: 42, DeliveryCompleteCount: 5,
		Batches: []StateBatch{{42, 50, StateAcknowledged, 1}, {51, 51, StateAvailable, 3}}}
	k := Key{Group: "g", TopicID: [16]byte{1, 2}, Partition: 3}
	for name, b := range map[string][]byte{"update": encodeUpdateValue(s), "snapshot": EncodeSnapshotValue(s),
		"update-key": encodeUpdateKey(k), "snapshot-key": EncodeKey(k)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// InitializeMany writes what one Initialize per partition writes, in the
// same order (a partition asked for twice, one with state already, one
// whose state partition is not led here: NOT_COORDINATOR), but as batches of
// at most initBatchRecords records per state partition.
func TestCoordinatorInitializeMany(t *testing.T) {
	newCoord := func(l *memLog, batches *[]int) *Coordinator {
		c := &Coordinator{
			Append: func(p int32, key, value []byte) error {
				l.recs = append(l.recs, [2][]byte{key, value})
				return nil
			},
			Partitions: func() int32 { return 2 },
			NowMs:      func() int64 { return 5 },
		}
		if batches != nil {
			c.AppendBatch = func(p int32, keys, values [][]byte) error {
				*batches = append(*batches, len(keys))
				for i := range keys {
					l.recs = append(l.recs, [2][]byte{keys[i], values[i]})
				}
				return nil
			}
		}
		if err := c.LoadPartition(0, l.replay); err != nil { // state partition 1 is not led
			t.Fatal(err)
		}
		return c
	}
	var reqs []InitRequest
	for p := range int32(1200) {
		reqs = append(reqs, InitRequest{Key: Key{Group: "g", TopicID: [16]byte{1}, Partition: p}, StateEpoch: 3, StartOffset: -1})
	}
	led := -1
	for i, r := range reqs {
		if r.Key.StatePartition(2) == 0 {
			led = i
			break
		}
	}
	reqs = append(reqs, reqs[led])
	one, many := &memLog{}, &memLog{}
	var batches []int
	seq, bat := newCoord(one, nil), newCoord(many, &batches)
	for _, c := range []*Coordinator{seq, bat} {
		if code := c.Write(reqs[led].Key, Snapshot{StartOffset: 10, LeaderEpoch: 1, DeliveryCompleteCount: -1}); code != 0 {
			t.Fatalf("write: %d", code)
		}
	}
	var want []int16
	for _, r := range reqs {
		want = append(want, seq.Initialize(r.Key, r.StateEpoch, r.StartOffset))
	}
	got := bat.InitializeMany(reqs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	notCoord := 0
	for _, c := range got {
		if c == kerr.NotCoordinator.Code {
			notCoord++
		}
	}
	if notCoord == 0 || notCoord == len(got) {
		t.Fatalf("%d of %d NOT_COORDINATOR", notCoord, len(got))
	}
	if !reflect.DeepEqual(many.recs, one.recs) {
		t.Fatalf("InitializeMany wrote %d records, Initialize %d, or not the same", len(many.recs), len(one.recs))
	}
	total := 0
	for _, n := range batches {
		if n > initBatchRecords {
			t.Fatalf("a batch of %d records", n)
		}
		total += n
	}
	if len(batches) < 2 || total != len(many.recs)-1 { // the first record is the Write's
		t.Fatalf("batches %v for %d records", batches, len(many.recs)-1)
	}
	for _, r := range reqs {
		a, fa, ca := seq.Read(r.Key)
		b, fb, cb := bat.Read(r.Key)
		if !reflect.DeepEqual(a, b) || fa != fb || ca != cb {
			t.Fatalf("state of %v: %+v %v %d, want %+v %v %d", r.Key, b, fb, cb, a, fa, ca)
		}
	}
}

// InitializeMany writes its state partitions concurrently: a write waiting
// for one partition's replicas (here until the other partition's write has
// been made) does not hold up the other partition's.
func TestCoordinatorInitializeManyPartitionsConcurrently(t *testing.T) {
	var mu sync.Mutex
	wrote := map[int32]bool{}
	other := make(chan struct{})
	c := &Coordinator{
		Append:     func(int32, []byte, []byte) error { return nil },
		Partitions: func() int32 { return 2 },
		NowMs:      func() int64 { return 5 },
		AppendBatch: func(p int32, keys, values [][]byte) error {
			mu.Lock()
			wrote[p] = true
			mu.Unlock()
			if p == 1 {
				close(other)
				return nil
			}
			select {
			case <-other:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("partition 1 was not written while partition 0 waited")
			}
		},
	}
	for p := range int32(2) {
		if err := c.LoadPartition(p, func(func(key, value []byte) error) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []InitRequest
	seen := map[int32]bool{}
	for p := int32(0); len(seen) < 2; p++ {
		k := Key{Group: "g", TopicID: [16]byte{1}, Partition: p}
		if s := k.StatePartition(2); !seen[s] {
			seen[s] = true
			reqs = append(reqs, InitRequest{Key: k, StateEpoch: 1, StartOffset: -1})
		}
	}
	if s := reqs[0].Key.StatePartition(2); s != 0 {
		reqs[0], reqs[1] = reqs[1], reqs[0] // partition 0's write first, as the sequential order had it
	}
	if codes := c.InitializeMany(reqs); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("codes %v, want both 0", codes)
	}
}

// A write that panics on InitializeMany's goroutine fails its partition's
// records (UNKNOWN_SERVER_ERROR) instead of the process; the other state
// partition's records are written.
func TestCoordinatorInitializeManyWritePanics(t *testing.T) {
	c := &Coordinator{
		Append:     func(int32, []byte, []byte) error { return nil },
		Partitions: func() int32 { return 2 },
		NowMs:      func() int64 { return 5 },
		AppendBatch: func(p int32, keys, values [][]byte) error {
			if p == 0 {
				panic("write failed")
			}
			return nil
		},
	}
	for p := range int32(2) {
		if err := c.LoadPartition(p, func(func(key, value []byte) error) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []InitRequest
	for p := range int32(20) {
		reqs = append(reqs, InitRequest{Key: Key{Group: "g", TopicID: [16]byte{1}, Partition: p}, StateEpoch: 1, StartOffset: -1})
	}
	codes := c.InitializeMany(reqs)
	for i, r := range reqs {
		want := int16(0)
		if r.Key.StatePartition(2) == 0 {
			want = kerr.UnknownServerError.Code
		}
		if codes[i] != want {
			t.Fatalf("partition %d (state partition %d): code %d, want %d", r.Key.Partition, r.Key.StatePartition(2), codes[i], want)
		}
	}
}
